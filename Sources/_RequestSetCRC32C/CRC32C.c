// The CPU's CRC-32C instruction. Each function is compiled for its instruction set with a
// target attribute, so the rest of the package needs no special flags, and is called only
// after a run-time check that the CPU has it.
#include "_RequestSetCRC32C.h"
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>

int _requestset_crc32c_hardware_available(void) {
  unsigned int eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
  return (ecx & bit_SSE4_2) ? 1 : 0;
}

__attribute__((target("sse4.2")))
uint32_t _requestset_crc32c_update(uint32_t state, const void *bytes, size_t length) {
  const unsigned char *p = (const unsigned char *)bytes;
  uint64_t crc = state;
  while (length >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);  // unaligned-safe; compiles to one load
    crc = __builtin_ia32_crc32di(crc, word);
    p += 8;
    length -= 8;
  }
  uint32_t crc32 = (uint32_t)crc;
  while (length > 0) {
    crc32 = __builtin_ia32_crc32qi(crc32, *p);
    p += 1;
    length -= 1;
  }
  return crc32;
}

#elif defined(__aarch64__)
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
int _requestset_crc32c_hardware_available(void) {
  return (getauxval(AT_HWCAP) & HWCAP_CRC32) ? 1 : 0;
}
#elif defined(__APPLE__)
// Every arm64 Apple CPU has the CRC extension.
int _requestset_crc32c_hardware_available(void) { return 1; }
#else
int _requestset_crc32c_hardware_available(void) { return 0; }
#endif

__attribute__((target("crc")))
uint32_t _requestset_crc32c_update(uint32_t state, const void *bytes, size_t length) {
  const unsigned char *p = (const unsigned char *)bytes;
  uint32_t crc = state;
  while (length >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    crc = __builtin_arm_crc32cd(crc, word);
    p += 8;
    length -= 8;
  }
  while (length > 0) {
    crc = __builtin_arm_crc32cb(crc, *p);
    p += 1;
    length -= 1;
  }
  return crc;
}

#else
int _requestset_crc32c_hardware_available(void) { return 0; }
uint32_t _requestset_crc32c_update(uint32_t state, const void *bytes, size_t length) {
  (void)bytes;
  (void)length;
  return state;  // never called: the check above says no
}
#endif
