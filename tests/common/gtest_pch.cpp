// The host of Google Test's precompiled header (cmake/TestPch.cmake): the test programs reuse the
// header this program's build precompiles. It runs no test.
int main() { return 0; }
