// The child process of the SQL stores' two-process tests.
import RequestSet
import RequestSetPostgres
import RequestSetSQLite
