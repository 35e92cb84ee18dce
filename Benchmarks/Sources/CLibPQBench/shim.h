// libpq for the plain-libpq baseline of the issue 13 benchmarks. The library's own CLibPQ
// target is not a product, so the benchmark package wraps libpq itself.
#include <libpq-fe.h>
