// Typed, non-variadic wrappers for the libcurl calls runner makes: curl_easy_setopt,
// curl_easy_getinfo and curl_multi_setopt are varargs, which Swift cannot call.
#ifndef RUNNER_CCURL_SHIM_H
#define RUNNER_CCURL_SHIM_H

#include <curl/curl.h>

typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *context);

// MARK: - Easy handle options

static inline CURLcode ccurl_set_long(CURL *easy, CURLoption option, long value) { return curl_easy_setopt(easy, option, value); }
static inline CURLcode ccurl_set_offset(CURL *easy, CURLoption option, curl_off_t value) { return curl_easy_setopt(easy, option, value); }
static inline CURLcode ccurl_set_string(CURL *easy, CURLoption option, const char *value) { return curl_easy_setopt(easy, option, value); }
static inline CURLcode ccurl_set_pointer(CURL *easy, CURLoption option, void *value) { return curl_easy_setopt(easy, option, value); }
static inline CURLcode ccurl_set_headers(CURL *easy, struct curl_slist *headers) { return curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers); }
static inline CURLcode ccurl_set_callback(CURL *easy, CURLoption option, ccurl_data_callback callback) { return curl_easy_setopt(easy, option, callback); }

// MARK: - Easy handle information

static inline long ccurl_info_long(CURL *easy, CURLINFO info) {
    long value = 0;
    curl_easy_getinfo(easy, info, &value);
    return value;
}
static inline curl_off_t ccurl_info_offset(CURL *easy, CURLINFO info) {
    curl_off_t value = 0;
    curl_easy_getinfo(easy, info, &value);
    return value;
}

// MARK: - Multi handle

static inline CURLMcode ccurl_multi_set_long(CURLM *multi, CURLMoption option, long value) { return curl_multi_setopt(multi, option, value); }

// The finished transfer a CURLMsg reports, and its result (CURLMsg.data is a union).
static inline CURL *ccurl_message_handle(CURLMsg *message) { return message->easy_handle; }
static inline int ccurl_message_is_done(CURLMsg *message) { return message->msg == CURLMSG_DONE; }
static inline CURLcode ccurl_message_result(CURLMsg *message) { return message->data.result; }

#endif
