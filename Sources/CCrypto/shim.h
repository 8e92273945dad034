// OpenSSL's one-shot SHA-256 and HMAC (neither variadic nor deprecated in 3.0): the object store's
// request signatures and payload hashes. libcurl links the same libcrypto already.
#ifndef RUNNER_CCRYPTO_SHIM_H
#define RUNNER_CCRYPTO_SHIM_H

#include <openssl/sha.h>
#include <openssl/hmac.h>

#endif
