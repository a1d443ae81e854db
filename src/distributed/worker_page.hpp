#pragma once
/**
 * @file A worker's own live page (/status on its --dashboard-address): the tasks it runs now,
 * its task states, memory (managed, spilled, process), CPU and GPU. Self-contained HTML with its
 * script inline, as the scheduler's page (status_page.hpp). Private to libtessera.
 */
#include <string_view>

namespace tessera::distributed {

/** @brief The worker's /status page. */
std::string_view worker_page_html();

}  // namespace tessera::distributed
