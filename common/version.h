#ifndef SBX_COMMON_VERSION_H
#define SBX_COMMON_VERSION_H

/* The release of sbxsh, sbx and sbx-agent: one number for all three programs, which are
 * built and installed together (`sbxsh --version`, `sbx --version`). */
#define SBXSH_VERSION "0.1.0"

#endif
