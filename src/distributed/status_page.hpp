#pragma once
/**
 * @file The scheduler dashboard's live page (/status): one self-contained HTML document with
 * its script and styles inline (the machines it runs on have no internet, so nothing comes from
 * a CDN). Its updates are pushed by /api/v1/events (server-sent events) a few times a second;
 * where they do not arrive it polls /api/v1/workers, /api/v1/progress and /api/v1/task-stream.
 * It draws the task stream on a canvas. Private to libtessera.
 */
#include <string_view>

namespace tessera::distributed {

/** @brief The /status page. */
std::string_view status_page_html();

}  // namespace tessera::distributed
