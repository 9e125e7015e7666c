// Open-loop request-stream driver for Ramulator 2.1 (scripts/ramulator_validate.py, docs/timing.md).
//
//   xlat_dram_driver CONFIG.yaml STREAM [--core-mhz 2600] [--stats FILE] [--latencies FILE]
//
// CONFIG is a Ramulator 2.1 YAML exported by `python -m ramulator export` with the `External`
// frontend (scripts/ramulator/ddr4_3200aa.yaml). STREAM is a text file, one request a line:
//
//   <arrival_cycle> <hex byte address> <R|W>
//
// arrival_cycle counts cycles of a core clocked at --core-mhz (2600 MHz, xlat's
// mem.dram.core_clock_mhz), in non-decreasing order; '#' starts a comment. Every request is one
// 64-byte transaction (the DDR4 x64 burst; the address's offset bits are ignored by Ramulator).
//
// Clocks. The driver ticks the memory system once per DRAM clock (tCK from the YAML: 625 ps,
// 1600 MHz for DDR4-3200); after k ticks the time is k * tCK. A request that arrives at core
// cycle c, i.e. at c * 1e6 / core_mhz ps, may be sent at the first DRAM cycle boundary not before
// it: k = ceil(c * 1e6 / (core_mhz * tCK_ps)) (= ceil(c * 8 / 13) at 2600 and 1600 MHz). It is
// sent then or, while the controller refuses it (its read or write queue is full), retried every
// DRAM cycle after; requests are sent in stream order, so a refused request holds back those
// after it (a FIFO miss queue in front of the controller).
//
// A read's latency is its completion time (the cycle Ramulator hands it back: the burst's last
// beat, read_latency = nCL + nBL after the RD command) minus its arrival time in the stream, in
// ns: it includes the time spent waiting for room in the controller's queue. A write completes
// when Ramulator retires it (its WR command issues, or it coalesces with a buffered write).
//
// Prints one JSON object on stdout: counts, time span, read latencies (mean, p50, p90, p99,
// max) and Ramulator's row-buffer counters. --stats writes Ramulator's own statistics (YAML);
// --latencies writes each read's latency in ns, one a line, in stream order.

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ramulator/base/config.h"
#include "ramulator/base/factory.h"
#include "ramulator/base/request.h"
#include "ramulator/frontend/i_frontend.h"
#include "ramulator/memory_system/i_memory_system.h"

namespace {

struct Req {
  uint64_t arrival;  // core cycles
  uint64_t addr;
  bool is_write;
};

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "xlat_dram_driver: " << msg << "\n";
  std::exit(2);
}

std::vector<Req> read_stream(const std::string& path) {
  std::ifstream in(path);
  if (!in) die("cannot open " + path);
  std::vector<Req> reqs;
  std::string line;
  uint64_t lineno = 0, last = 0;
  while (std::getline(in, line)) {
    lineno++;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string cyc, addr, kind;
    if (!(ls >> cyc)) continue;  // blank line
    if (!(ls >> addr >> kind)) die(path + ":" + std::to_string(lineno) + ": expected '<cycle> <hex address> <R|W>'");
    Req r{};
    try {
      r.arrival = std::stoull(cyc, nullptr, 10);
      r.addr = std::stoull(addr, nullptr, 16);  // accepts an optional 0x
    } catch (const std::exception&) {
      die(path + ":" + std::to_string(lineno) + ": bad number in '" + line + "'");
    }
    if (kind == "R" || kind == "r") {
      r.is_write = false;
    } else if (kind == "W" || kind == "w") {
      r.is_write = true;
    } else {
      die(path + ":" + std::to_string(lineno) + ": request kind must be R or W, got '" + kind + "'");
    }
    if (r.arrival < last) die(path + ":" + std::to_string(lineno) + ": arrival cycles must not decrease");
    last = r.arrival;
    reqs.push_back(r);
  }
  return reqs;
}

// The value of `key: <number>` at its first occurrence in Ramulator's stats text, or -1.
double stat(const std::string& text, const std::string& key) {
  std::smatch m;
  std::regex re("\\b" + key + ": ([-0-9.eE+]+)");
  if (std::regex_search(text, m, re)) return std::stod(m[1]);
  return -1;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(std::ceil(q * v.size()));
  i = i == 0 ? 0 : i - 1;
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

}  // namespace

int main(int argc, char* argv[]) {
  std::string config_path, stream_path, stats_path, lat_path;
  double core_mhz = 2600;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--core-mhz") {
      core_mhz = std::stod(next());
    } else if (a == "--stats") {
      stats_path = next();
    } else if (a == "--latencies") {
      lat_path = next();
    } else if (a == "-h" || a == "--help") {
      std::cout << "usage: xlat_dram_driver CONFIG.yaml STREAM [--core-mhz MHZ] [--stats FILE] "
                   "[--latencies FILE]\n";
      return 0;
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 2) die("usage: xlat_dram_driver CONFIG.yaml STREAM [--core-mhz MHZ] [--stats FILE] [--latencies FILE]");
  config_path = pos[0];
  stream_path = pos[1];

  std::vector<Req> reqs = read_stream(stream_path);
  if (reqs.empty()) die(stream_path + ": no requests");

  auto config = Ramulator::Config::parse_config_file(config_path);
  std::unique_ptr<Ramulator::IFrontEnd> frontend(Ramulator::Factory::create_frontend(config));
  std::unique_ptr<Ramulator::IMemorySystem> mem(Ramulator::Factory::create_memory_system(config));
  frontend->connect_memory_system(mem.get());
  mem->connect_frontend(frontend.get());

  const int tx_bytes = mem->get_tx_bytes();
  const uint64_t tck_ps = static_cast<uint64_t>(std::llround(mem->get_tCK() * 1000.0));
  if (tck_ps == 0) die("memory system reports no tCK");
  // Core cycles and DRAM cycles in integer picoseconds x core_mhz: c core cycles last
  // c * 1e6 / core_mhz ps; DRAM cycle k starts at k * tck_ps ps.
  const uint64_t core_mhz_i = static_cast<uint64_t>(std::llround(core_mhz));
  if (std::fabs(core_mhz - core_mhz_i) > 1e-9) die("--core-mhz must be a whole number of MHz");
  const uint64_t den = core_mhz_i * tck_ps;
  auto eligible = [&](uint64_t c) { return (c * 1000000ULL + den - 1) / den; };

  const size_t n = reqs.size();
  std::vector<double> lat_ns(n, -1);
  uint64_t reads = 0, writes = 0, done = 0;
  int64_t last_done_cycle = 0;
  uint64_t now = 0;  // DRAM cycles ticked so far
  uint64_t retries = 0;

  size_t next = 0;
  uint64_t last_progress = 0, last_count = 0;
  while (done < n) {
    while (next < n && eligible(reqs[next].arrival) <= now) {
      const Req& r = reqs[next];
      size_t idx = next;
      int type = r.is_write ? Ramulator::Request::Type::Write : Ramulator::Request::Type::Read;
      // Reads complete at req.depart (set by the controller); writes when they retire, which
      // is during the tick that makes the clock now + 1 (or at once when coalesced).
      bool ok = frontend->receive_external_requests(
          type, static_cast<Ramulator::Addr_t>(r.addr), 0,
          [&, idx](Ramulator::Request& q) {
            int64_t end = reqs[idx].is_write ? static_cast<int64_t>(now) + 1 : q.depart;
            if (!reqs[idx].is_write) {
              lat_ns[idx] = end * static_cast<double>(tck_ps) / 1000.0 - reqs[idx].arrival * 1000.0 / core_mhz;
            }
            last_done_cycle = std::max(last_done_cycle, end);
            done++;
          },
          tx_bytes);
      if (!ok) {
        retries++;
        break;
      }
      (r.is_write ? writes : reads)++;
      next++;
    }
    mem->tick();
    now++;
    if (done == n) break;
    if (done + next != last_count) {
      last_count = done + next;
      last_progress = now;
    } else if (now - last_progress > 50'000'000ULL && (next == n || eligible(reqs[next].arrival) < now)) {
      die("no request sent or completed for 50 M DRAM cycles: the controller seems stuck");
    }
  }

  frontend->finalize();
  mem->finalize();
  std::ostringstream ss;
  frontend->print_stats(ss);
  mem->print_stats(ss);
  std::string stats_text = ss.str();
  if (!stats_path.empty()) {
    std::ofstream(stats_path) << stats_text;
  }

  std::vector<double> rl;
  rl.reserve(reads);
  for (size_t i = 0; i < n; i++) {
    if (!reqs[i].is_write) rl.push_back(lat_ns[i]);
  }
  if (!lat_path.empty()) {
    std::ofstream out(lat_path);
    char buf[32];
    for (double v : rl) {
      std::snprintf(buf, sizeof buf, "%.3f\n", v);
      out << buf;
    }
  }
  double sum = 0, mx = 0;
  for (double v : rl) {
    sum += v;
    mx = std::max(mx, v);
  }
  const double first_ns = reqs.front().arrival * 1000.0 / core_mhz;
  const double last_arrival_ns = reqs.back().arrival * 1000.0 / core_mhz;
  const double end_ns = last_done_cycle * static_cast<double>(tck_ps) / 1000.0;

  std::printf(
      "{\"requests\": %zu, \"reads\": %" PRIu64 ", \"writes\": %" PRIu64 ", \"bytes\": %" PRIu64
      ", \"tx_bytes\": %d, \"core_mhz\": %" PRIu64 ", \"tck_ps\": %" PRIu64
      ", \"dram_cycles\": %" PRIu64 ", \"refused_sends\": %" PRIu64
      ", \"first_arrival_ns\": %.3f, \"last_arrival_ns\": %.3f, \"last_completion_ns\": %.3f"
      ", \"read_lat_avg_ns\": %.3f, \"read_lat_p50_ns\": %.3f, \"read_lat_p90_ns\": %.3f"
      ", \"read_lat_p99_ns\": %.3f, \"read_lat_max_ns\": %.3f"
      ", \"row_hits\": %.0f, \"row_misses\": %.0f, \"row_conflicts\": %.0f"
      ", \"read_row_hits\": %.0f, \"read_row_misses\": %.0f, \"read_row_conflicts\": %.0f"
      ", \"reads_forwarded\": %.0f, \"writes_coalesced\": %.0f}\n",
      n, reads, writes, static_cast<uint64_t>(n) * tx_bytes, tx_bytes, core_mhz_i, tck_ps, now,
      retries, first_ns, last_arrival_ns, end_ns, rl.empty() ? 0.0 : sum / rl.size(),
      percentile(rl, 0.50), percentile(rl, 0.90), percentile(rl, 0.99), mx,
      stat(stats_text, "row_hits"), stat(stats_text, "row_misses"), stat(stats_text, "row_conflicts"),
      stat(stats_text, "read_row_hits"), stat(stats_text, "read_row_misses"),
      stat(stats_text, "read_row_conflicts"), stat(stats_text, "num_read_reqs_forwarded"),
      stat(stats_text, "num_write_reqs_coalesced"));
  return 0;
}
