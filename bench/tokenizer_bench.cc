// Tokenizer throughput (MB/s of UTF-8 input) for every vocabulary in ../shared/vocab, on a
// ~200 KB multilingual document built from the sample below (English prose, C++ and Python code,
// Chinese, Japanese, Russian, Arabic, emoji, numbers and whitespace runs). Each copy of the sample
// carries its own section number so the text is not one block repeated verbatim.
// Data folder: ZINC_TEST_DATA, else ../shared next to the source tree.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace {

constexpr const char* kSample = R"SAMPLE(## Section {N}: release notes

The quick brown fox jumps over the lazy dog. It's 2024-06-15, and we've shipped version 3.14.159 --
twice as fast as last year's build (which took 12,345 ms). Don't forget: "quotes", 'apostrophes',
and parentheses (like these) are everywhere; so are URLs such as https://example.com/path?q=42&lang=en.

```cpp
template <typename T>
int64_t sum(const std::vector<T>& values) {
    int64_t total = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        total += static_cast<int64_t>(values[i]) * 3;   // weight 3
    }
    return total;  // {N}
}
```

    def tokenize(text: str) -> list[int]:
        if not text:
            return []
        return [ord(c) % 256 for c in text.split()]


人工智能正在改变我们的生活方式。大型语言模型可以理解和生成自然语言，并且能够回答问题、翻译文本和编写代码。
今日は良い天気ですね。東京の桜は三月の終わりに咲き始めます。カタカナとひらがなと漢字を混ぜて書きます。
Быстрая коричневая лиса прыгает через ленивую собаку. Москва — столица России, население около 13 миллионов.
مرحبا بالعالم! اللغة العربية تكتب من اليمين إلى اليسار، وهي لغة جميلة وغنية بالمفردات.
Emoji: 😀 😃 🚀🔥✨ 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ ✅ — mixed with text 🙂 and numbers 1️⃣2️⃣3️⃣.
Numbers: 0 1 22 333 4444 55555 666666 7777777 3.14159 2.71828 6.022e23 -42 +17 100% $9.99 €5,00 ¥1000

Tabs	and		runs   of     spaces      end here.			
Trailing spaces and blank lines follow.   


Ünïcödé àccents: café, naïve, résumé, Straße, Øresund, İstanbul, Ελληνικά, עברית, हिन्दी, ไทย, 한국어.
)SAMPLE";

std::string build_document(size_t target_bytes) {
  std::string doc, sample = kSample;
  for (int n = 1; doc.size() < target_bytes; ++n) {
    std::string s = sample;
    for (size_t p; (p = s.find("{N}")) != std::string::npos;) s.replace(p, 3, std::to_string(n * 7919 % 100000));
    doc += s;
  }
  return doc;
}

const std::string& document() {
  static const std::string doc = build_document(200 * 1024);
  return doc;
}

std::string data_dir() {
  const char* env = std::getenv("ZINC_TEST_DATA");
  if (env && *env) return env;
  return (std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "shared").lexically_normal().string();
}

void encode_document(benchmark::State& state, const std::string& path) {
  auto file = zinc::gguf::open_file(path);
  if (!file.ok()) {
    state.SkipWithError(file.status().message().c_str());
    return;
  }
  auto tok = zinc::tokenizer::Tokenizer::load(**file);
  if (!tok.ok()) {
    state.SkipWithError(tok.status().message().c_str());
    return;
  }
  const std::string& doc = document();
  size_t n_tokens = 0;
  for (auto _ : state) {
    std::vector<int32_t> ids = (*tok)->encode(doc, false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(doc.size()));
  state.counters["doc_bytes"] = double(doc.size());
  state.counters["tokens"] = double(n_tokens);
}

void decode_document(benchmark::State& state, const std::string& path) {
  auto file = zinc::gguf::open_file(path);
  auto tok = file.ok() ? zinc::tokenizer::Tokenizer::load(**file) : file.status();
  if (!tok.ok()) {
    state.SkipWithError(tok.status().message().c_str());
    return;
  }
  std::vector<int32_t> ids = (*tok)->encode(document(), false, false);
  for (auto _ : state) {
    zinc::tokenizer::StreamingDecoder d(**tok);
    size_t bytes = 0;
    for (int32_t id : ids) bytes += d.push(id).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(document().size()));
}

// One benchmark per vocabulary file found at start-up.
const bool registered = [] {
  const std::string dir = data_dir() + "/vocab";
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".gguf") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    std::string name = std::filesystem::path(path).stem().string();
    name = name.substr(name.find("vocab-") + 6);
    benchmark::RegisterBenchmark(("encode/" + name).c_str(), encode_document, path)->Unit(benchmark::kMillisecond);
  }
  for (const std::string& path : paths) {
    std::string name = std::filesystem::path(path).stem().string();
    name = name.substr(name.find("vocab-") + 6);
    benchmark::RegisterBenchmark(("stream_decode/" + name).c_str(), decode_document, path)->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
