#pragma once
/**
 * @file What a worker may use, from its command-line forms: --memory-limit and
 * --device-memory-limit (Dask's and dask-cuda's), the machine's memory, --resources.
 * Private to the library (src/); tests include it directly.
 */
#include <cstddef>
#include <map>
#include <string>

namespace tessera::distributed {

/**
 * @brief Parses Dask's --memory-limit forms into bytes (0 = no limit).
 *
 * "0" or "none": no limit; "auto": total_memory / nworkers; a unitless number <= 1 ("0.5",
 * "1"): that fraction of total_memory (as Dask: of the whole machine); a byte count with an
 * optional decimal (kB, MB, GB, TB, PB, k, M, G, T, P, B) or binary (KiB, MiB, GiB, TiB, PiB,
 * Ki, ...) unit, case-insensitive, spaces ignored: "4GB", "4 GB", "4GiB", "512MiB", "10e9",
 * "1kB". Fractional byte counts with a unit are rounded down ("1.5kB" = 1500); a unitless
 * number above 1 that is not whole ("1.5") is refused: it is neither a fraction nor bytes
 * (it used to mean 1 byte).
 * As Dask, a limit above total_memory is capped to it (with a warning) when total_memory > 0.
 * Throws tessera::Error quoting the input on anything else (negative, non-finite, garbage).
 */
std::size_t parse_memory_limit(const std::string& text, std::size_t total_memory, int nworkers = 1);

/**
 * @brief Parses --device-memory-limit (dask-cuda's forms) into bytes (0 = no limit).
 *
 * "auto" or "default": 0.8 of total_device_memory (the CLI default, as dask-cuda's); "0" or
 * "none": no limit (no spilling before the pool runs short); a unitless number <= 1 ("0.5"): that
 * fraction of total_device_memory; otherwise a byte count as parse_memory_limit ("10GB",
 * "512MiB", "10e9"), capped to total_device_memory (with a warning) when that is > 0.
 * Throws tessera::Error quoting the input on anything else.
 */
std::size_t parse_device_memory_limit(const std::string& text, std::size_t total_device_memory);

/**
 * @brief The smallest --memory-limit a worker process is started with, other than 0 (none).
 *
 * How it was chosen: the resident set (VmRSS in /proc/PID/status) of an idle process of this
 * program, measured on the Release build (2026-12, x86-64 Linux) after it had registered and
 * before any task: about 43 MB for tessera-worker's nanny, which is the same program with
 * libtessera loaded but not the CUDA libraries, and about 237 MB for the worker of a build with
 * CUDA on a machine without a GPU (cuBLAS and the CUDA runtime mapped: 84 MB anonymous, 120 MB
 * of libraries). 128 MiB is three times the first: below it a worker without CUDA has next to
 * no room for results before its nanny's terminate threshold (0.95 of the limit) kills it, and
 * `--memory-limit 10MB` had the nanny restart the worker 11 times a minute and give up. A build
 * with CUDA needs more than this floor; the worker itself checks its resident memory at start
 * against what its nanny allows (check_memory_at_rest, nanny.hpp), so no figure for every build
 * has to be written here.
 */
inline constexpr std::size_t kMinWorkerMemoryLimit = std::size_t{128} << 20;

/**
 * @brief Throws tessera::Error when a worker's memory limit (bytes, per worker) is above 0 and
 * below kMinWorkerMemoryLimit; the message quotes `text` (the flag's value) and, with several
 * workers sharing it (`nworkers`), says each one's share.
 */
void check_worker_memory_limit(std::size_t limit, const std::string& text, int nworkers = 1);

/** @brief The default device memory limit: 0.8 of the device (dask-cuda's default). */
inline constexpr double kDefaultDeviceMemoryFraction = 0.8;

/** @brief Total physical memory of this machine (sysconf), or the cgroup (v1/v2) limit when smaller. */
std::size_t system_memory();

/**
 * @brief Parses worker resources, "GPU=2 MEM=10e9" or "GPU=2,MEM=10e9", into {"GPU":2,"MEM":1e10}.
 *
 * Throws tessera::Error quoting the entry on a missing '=', an empty name, a repeated name or a
 * value that is not a finite number >= 0. An empty or blank text gives an empty map.
 */
std::map<std::string, double> parse_resources(const std::string& text);

}  // namespace tessera::distributed
