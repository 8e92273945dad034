// OpenSSL's one-shot digests and HMAC (none variadic or deprecated in 3.0): the object store's
// request signatures, payload hashes and the MD5 a single-part PUT's ETag is. libcurl links the
// same libcrypto already.
#ifndef RUNNER_CCRYPTO_SHIM_H
#define RUNNER_CCRYPTO_SHIM_H

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>

#endif
