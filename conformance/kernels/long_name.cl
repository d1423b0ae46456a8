// A kernel whose name (269 bytes) is longer than a file name may be,
// as SYCL's mangled kernel names of nested templates are.
kernel void add_two_with_a_name_longer_than_a_file_name_may_be_with_a_name_longer_than_a_file_name_may_be_with_a_name_longer_than_a_file_name_may_be_with_a_name_longer_than_a_file_name_may_be_with_a_name_longer_than_a_file_name_may_be_with_a_name_longer_than_a_file_name_may_be_end(global uint *data) {
  size_t i = get_global_id(0);
  data[i] += 2;
}
