// A kernel calling a function another SPIR-V module defines (link_lib.cl):
// the program only builds when the two modules are linked.
int scaled(int x);

kernel void apply_scaled(global int *data) {
  size_t i = get_global_id(0);
  data[i] = scaled(data[i]);
}
