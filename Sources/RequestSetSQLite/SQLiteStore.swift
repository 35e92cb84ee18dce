#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import RequestSet
import _RequestSetSQL
