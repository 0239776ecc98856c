// ccshim's exported XlaCustomCallStatusSetSuccess/SetFailure on a status
// made as XLA makes one: XLA's own definition of the struct (a
// std::optional<std::string>), default-constructed on the stack, read back
// and destroyed by C++ -- which is what happens when a legacy kernel loaded
// into jaxlib calls the setters (jaxlib exports none of its own, so the
// kernel finds ccshim's).  Run under AddressSanitizer this also proves that
// heap messages are freed with the operator they were allocated with.

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "xla/service/custom_call_status.h"

// jaxlib is built with libstdc++, whose std::string ccshim's setters write.
// Another C++ library (zig's libc++, in the aarch64 suite) lays std::string
// out otherwise, and there is nothing of XLA's to check.
#if defined(__GLIBCXX__)

// XLA's definition (xla/service/custom_call_status_internal.h).
struct XlaCustomCallStatus_ {
  std::optional<std::string> message;
};

static int failures = 0;

#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "%s:%d: EXPECT(%s)\n", __FILE__, __LINE__, #cond); \
      failures++;                                                             \
    }                                                                         \
  } while (0)

int main() {
  static_assert(sizeof(XlaCustomCallStatus_) == 40, "libstdc++ LP64 layout");
  static_assert(offsetof(XlaCustomCallStatus_, message) == 0, "");

  {
    XlaCustomCallStatus_ status;  // as XLA's thunks make it
    EXPECT(!status.message.has_value());
    XlaCustomCallStatusSetFailure(&status, "short", 5);
    EXPECT(status.message.has_value() && *status.message == "short");
  }  // destroyed by C++
  {
    XlaCustomCallStatus_ status;
    std::string long_text(300, 'x');
    long_text += "END";
    XlaCustomCallStatusSetFailure(&status, long_text.c_str(), long_text.size());
    EXPECT(status.message.has_value() && *status.message == long_text);
    // A second failure replaces the first (a heap one freed), then success.
    XlaCustomCallStatusSetFailure(&status, "second failure message!", 23);
    EXPECT(*status.message == "second failure message!");
    XlaCustomCallStatusSetFailure(&status, long_text.c_str(), long_text.size());
    XlaCustomCallStatusSetSuccess(&status);
    EXPECT(!status.message.has_value());
    status.message = "set by C++";  // and C++ can keep using it
    EXPECT(*status.message == "set by C++");
    XlaCustomCallStatusSetFailure(&status, "and by ccshim again", 19);
    EXPECT(*status.message == "and by ccshim again");
  }
  {
    // As XLA: up to message_len bytes, or to the first NUL.
    XlaCustomCallStatus_ status;
    XlaCustomCallStatusSetFailure(&status, "abcdefgh", 3);
    EXPECT(*status.message == "abc");
    XlaCustomCallStatusSetFailure(&status, "ab\0cd", 5);
    EXPECT(*status.message == "ab");
    // No terminator within message_len: stop at message_len, read no further.
    char unterminated[4] = {'w', 'x', 'y', 'z'};
    XlaCustomCallStatusSetFailure(&status, unterminated, sizeof unterminated);
    EXPECT(*status.message == "wxyz");
    // NULL fails with an empty message instead of crashing.
    XlaCustomCallStatusSetFailure(&status, nullptr, 10);
    EXPECT(status.message.has_value() && status.message->empty());
    // Exactly 15 and 16 bytes straddle the short-string buffer.
    XlaCustomCallStatusSetFailure(&status, "0123456789abcde", 15);
    EXPECT(*status.message == "0123456789abcde");
    XlaCustomCallStatusSetFailure(&status, "0123456789abcdef", 16);
    EXPECT(*status.message == "0123456789abcdef");
    std::string copy = *status.message;  // a real std::string, copyable
    EXPECT(copy.size() == 16);
  }
  XlaCustomCallStatusSetSuccess(nullptr);
  XlaCustomCallStatusSetFailure(nullptr, "ignored", 7);

  if (failures) return 1;
  std::printf("status layout: ccshim's setters work on XLA's std::optional<std::string> status\n");
  return 0;
}

#else

int main() {
  std::printf("skipped: this C++ library is not libstdc++, whose std::string XLA's status holds\n");
  return 77;
}

#endif
