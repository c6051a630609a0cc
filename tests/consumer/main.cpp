#include <dedup/fingerprint.h>

#include <iostream>

int main() {
  auto fp = crawler::dedup::request_fingerprint("GET", "http://example.com/");
  std::cout << fp.hex() << '\n';
  return fp.hex() == "cebe46deeab7ee5915824a38cf73ee6f7eb0aba5" ? 0 : 1;
}
