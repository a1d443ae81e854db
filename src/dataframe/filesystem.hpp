#pragma once
/** @file Private: local and s3:// paths for the readers: globs, listing, opening. */
#include <memory>
#include <string>
#include <vector>

#include <cereal/types/string.hpp>

#include "tessera/dataframe/io.hpp"

namespace arrow::fs {
class FileSystem;
}

namespace tessera::dataframe::detail {

/** @brief StorageOptions as task parameters. */
struct Storage {
  bool anonymous = false;
  std::string endpoint_override, region, access_key, secret_key;
  template <class A>
  void serialize(A& ar) {
    ar(anonymous, endpoint_override, region, access_key, secret_key);
  }
};
Storage storage_of(const StorageOptions& o);

/** @brief The filesystem of `uri` ("s3://bucket/key" or a local path) and the path inside it. */
std::shared_ptr<arrow::fs::FileSystem> filesystem_for(const std::string& uri, const Storage& storage,
                                                      std::string* path);

/**
 * @brief The files the patterns name (globs with * ? [..] in the last component; a directory
 * gives its files ending in `directory_suffix`), sorted, as URIs. Throws Error naming a pattern
 * that matches nothing or a file that does not exist.
 */
std::vector<std::string> expand_paths(const std::vector<std::string>& patterns, const Storage& storage,
                                      const std::string& directory_suffix = "");

/** @brief Size in bytes of one file. */
std::int64_t file_size(const std::string& uri, const Storage& storage);

}  // namespace tessera::dataframe::detail
