#pragma once
// The UCX side of ucx:// (docs/ucx.md). ucx.cpp negotiates over a TCP control connection and
// calls these; ucx_engine*.cpp implement them when the build has UCX (TESSERA_HAS_UCX), ucx.cpp
// stubs them otherwise. Everything here runs on the comm I/O thread unless it says otherwise.
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "tessera/comm/comm.hpp"

namespace tessera::comm::detail::ucx {

/** What each end tells the other, over the control connection, to set up UCX. */
struct Offer {
  std::string worker_address;  ///< ucp_worker_get_address()
  std::uint64_t conn = 0;      ///< the id the peer puts in every active message to this comm
  bool cuda = false;           ///< can receive device frames directly (UCX with CUDA, a GPU)
};

/** Any thread. Starts UCX on first call (TESSERA_UCX=0 disables it); never throws. */
UcxStatus engine_status();
/** Any thread. True once UCX started successfully; never starts it. */
bool engine_running() noexcept;

/**
 * A ucx:// comm whose data goes over UCX. Made before the handshake so that messages arriving
 * over UCX before the control connection says "ready" wait in its inbox; handed to its owner
 * only once start() ran.
 */
class UcxCommBase : public Comm {
 public:
  using Comm::Comm;
  /** Our worker address and connection id, for the peer. */
  virtual Offer offer() const = 0;
  /** Creates the endpoint to the peer; throws CommError when UCX cannot reach it. */
  virtual void connect_peer(const Offer& theirs) = 0;
  /** Sends a ping over UCX; done(nullptr) once the pong is back, or the error after timeout. */
  virtual void ping(std::chrono::milliseconds timeout, std::function<void(std::exception_ptr)> done) = 0;
  /** The handshake succeeded: ctl (the TCP control connection) now only carries the close. */
  virtual void start(std::shared_ptr<Comm> ctl) = 0;
  /** The handshake failed: drops the UCX side quietly (nobody saw this comm). */
  virtual void abandon() = 0;
};

/**
 * A new UCX comm (not yet connected), or null when UCX is not running in this process.
 * local/peer are the addresses the comm reports (ucx://...).
 */
std::shared_ptr<UcxCommBase> make_comm(const CommOptions& options, std::string local, std::string peer,
                                       PeerInfo info);

/** Bytes this process wrote into and read out of shared rings (ucx_engine_ring.cpp); any thread. */
struct RingTraffic {
  std::uint64_t written = 0, read = 0;
};
RingTraffic ring_traffic() noexcept;

}  // namespace tessera::comm::detail::ucx
