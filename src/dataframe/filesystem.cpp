#include "filesystem.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <mutex>

#include <arrow/filesystem/api.h>
#include <arrow/filesystem/s3fs.h>

#include "arrow_util.hpp"

namespace tessera::dataframe::detail {

Storage storage_of(const StorageOptions& o) {
  return Storage{o.anonymous, o.endpoint_override, o.region, o.access_key, o.secret_key};
}

namespace {

bool is_s3(const std::string& uri) { return uri.rfind("s3://", 0) == 0; }

void ensure_s3() {
  static std::once_flag once;
  std::call_once(once, [] {
    arrow::fs::S3GlobalOptions options;
    options.log_level = arrow::fs::S3LogLevel::Fatal;
    check_arrow(arrow::fs::InitializeS3(options), "initialising S3");
  });
}

// S3 is finalised at exit, before the AWS SDK's static objects go (else its destructors can
// crash). The handler is registered after the first client exists: exit handlers run in the
// reverse order of registration, so it then runs before the statics that client created die.
void finalize_s3_at_exit() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit([] { (void)arrow::fs::FinalizeS3(); }); });
}

bool has_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace

std::shared_ptr<arrow::fs::FileSystem> filesystem_for(const std::string& uri, const Storage& storage,
                                                      std::string* path) {
  if (!is_s3(uri)) {
    *path = uri;
    static auto local = std::make_shared<arrow::fs::LocalFileSystem>();
    return local;
  }
  ensure_s3();
  arrow::fs::S3Options options =
      storage.anonymous ? arrow::fs::S3Options::Anonymous()
      : !storage.access_key.empty() ? arrow::fs::S3Options::FromAccessKey(storage.access_key, storage.secret_key)
                                    : arrow::fs::S3Options::Defaults();
  if (!storage.region.empty()) options.region = storage.region;
  if (!storage.endpoint_override.empty()) {
    std::string endpoint = storage.endpoint_override;
    if (endpoint.rfind("http://", 0) == 0) {
      options.scheme = "http";
      endpoint = endpoint.substr(7);
    } else if (endpoint.rfind("https://", 0) == 0) {
      endpoint = endpoint.substr(8);
    }
    options.endpoint_override = endpoint;
  }
  *path = uri.substr(5);
  auto fs = unwrap(arrow::fs::S3FileSystem::Make(options), "cannot reach S3 for " + uri);
  finalize_s3_at_exit();
  return fs;
}

std::int64_t file_size(const std::string& uri, const Storage& storage) {
  std::string path;
  auto fs = filesystem_for(uri, storage, &path);
  auto info = unwrap(fs->GetFileInfo(path), uri);
  if (info.type() != arrow::fs::FileType::File) throw Error("no such file: " + uri);
  return info.size();
}

std::vector<std::string> expand_paths(const std::vector<std::string>& patterns, const Storage& storage,
                                      const std::string& directory_suffix) {
  std::vector<std::string> out;
  for (const auto& pattern : patterns) {
    const std::string prefix = is_s3(pattern) ? "s3://" : "";
    std::string path;
    auto fs = filesystem_for(pattern, storage, &path);
    std::vector<std::string> found;
    if (!has_glob(path)) {
      auto info = unwrap(fs->GetFileInfo(path), pattern);
      if (info.type() == arrow::fs::FileType::File) {
        found.push_back(pattern);
      } else if (info.type() == arrow::fs::FileType::Directory) {
        arrow::fs::FileSelector sel;
        sel.base_dir = path;
        for (const auto& f : unwrap(fs->GetFileInfo(sel), pattern))
          if (f.IsFile() && f.path().size() >= directory_suffix.size() &&
              f.path().compare(f.path().size() - directory_suffix.size(), directory_suffix.size(), directory_suffix) == 0)
            found.push_back(prefix + f.path());
      } else {
        throw Error("no such file: " + pattern);
      }
    } else {
      // Globs only in the last component: list its folder and match the names.
      const auto slash = path.rfind('/');
      if (has_glob(path.substr(0, slash == std::string::npos ? 0 : slash)))
        throw Error("glob characters are supported in the file name only: " + pattern);
      arrow::fs::FileSelector sel;
      sel.base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
      if (sel.base_dir.empty()) sel.base_dir = "/";
      sel.allow_not_found = true;
      for (const auto& f : unwrap(fs->GetFileInfo(sel), pattern)) {
        std::string p = f.path();
        // The local filesystem reports "./name" for the current folder; match the full path.
        if (slash == std::string::npos && p.rfind("./", 0) == 0) p = p.substr(2);
        if (f.IsFile() && ::fnmatch(path.c_str(), p.c_str(), FNM_PATHNAME) == 0) found.push_back(prefix + p);
      }
    }
    if (found.empty()) throw Error("no files match " + pattern);
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace tessera::dataframe::detail
