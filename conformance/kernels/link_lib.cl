// The function link_main.cl imports, exported from a module of its own.
int scaled(int x) { return 3 * x + 1; }
