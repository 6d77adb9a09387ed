/* What Debian's static ICU needs besides its code, so the host links it without
 * libicudata.a's 30 MB (third_party/icu.BUILD says what that leaves out). C, not C++: ICU's
 * C++ headers pull in <time.h>, whose declarations the tz definitions below would clash with.
 *
 * Every symbol here is hidden: it satisfies ICU's references inside each binary and is never
 * exported, so it cannot stand in for anything outside (libc's own tzname, another ICU). */
#include <stdint.h>

#include <unicode/udata.h>
#include <unicode/uversion.h>

/* An empty common-data table, as ICU's own source/stubdata/stubdata.cpp: a data header, then
 * a table of contents of pointers ("ToCP") with no entries. A lookup of data then fails with
 * U_MISSING_RESOURCE_ERROR, never a wrong answer. */
struct IcuDataHeader {
  uint16_t header_size;
  uint8_t magic1, magic2;
  UDataInfo info;
  char padding[8];
  uint32_t count, reserved;
  uint32_t empty_toc[4];
};

/* U_ICUDATA_ENTRY_POINT is icudt<major>_dat, the symbol libicuuc.a refers to. */
__attribute__((visibility("hidden"))) const struct IcuDataHeader U_ICUDATA_ENTRY_POINT = {
    32,
    0xda,
    0x27,
    {sizeof(UDataInfo), 0, U_IS_BIG_ENDIAN, U_CHARSET_FAMILY, sizeof(UChar), 0,
     {0x54, 0x6f, 0x43, 0x50},
     {1, 0, 0, 0},
     {0, 0, 0, 0}},
    {0},
    0,
    0,
    {0, 0, 0, 0},
};

/* Debian compiles libicuuc.a as position-independent executable code: putil.o reads glibc's
 * tzname and __timezone with PC-relative relocations, which a shared object (the Python
 * module) cannot resolve against libc.so. These stand in for them inside our binaries. ICU
 * reads them only to guess the host's time zone, and ICU time zones need the data left out
 * above, so nothing here can use them. */
__attribute__((visibility("hidden"))) long __timezone = 0;
__attribute__((visibility("hidden"))) char* tzname[2] = {0, 0};
