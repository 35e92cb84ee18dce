import CLibPQ
import RequestSet
import _RequestSetSQL
