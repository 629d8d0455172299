// `streampool plot TRACE -o FILE.svg|FILE.html`: memory over time, per pool used (solid) and
// reserved (dashed), as the engine replays the trace; below, one lane per stream with each
// allocation as a bar from its allocation to its free, the largest labelled. One self-contained
// file: no script, no font or style sheet from the network.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "commands.hpp"
#include "replay.hpp"

namespace streampool::cli {

std::function<void(double)> terminal_progress(const char* what, std::size_t records);

namespace {

constexpr double kWidth = 1200;
constexpr double kLeft = 90;
constexpr double kRight = 20;
constexpr double kChartTop = 40;
constexpr double kChartHeight = 320;
constexpr double kLaneHeight = 22;
constexpr std::size_t kMaxLanes = 24;
constexpr std::size_t kMaxBars = 20000;  // the largest allocations get bars; the file stays small
constexpr std::size_t kLabels = 10;

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(value));
  return text;
}

// At most one point per horizontal pixel: the bucket's largest values (peaks stay visible).
std::vector<Sample> thin(const std::vector<Sample>& samples, double duration) {
  if (samples.size() < 4000 || duration <= 0) return samples;
  std::vector<Sample> out;
  const double per_pixel = duration / (kWidth - kLeft - kRight);
  for (const Sample& sample : samples) {
    const auto bucket = static_cast<std::uint64_t>(static_cast<double>(sample.time_ns) / per_pixel);
    if (!out.empty() && static_cast<std::uint64_t>(static_cast<double>(out.back().time_ns) / per_pixel) == bucket) {
      out.back().reserved = std::max(out.back().reserved, sample.reserved);
      out.back().used = std::max(out.back().used, sample.used);
    } else {
      out.push_back(sample);
    }
  }
  return out;
}

std::string stream_name(std::uint64_t stream) {
  if (stream == 0) return "legacy default";
  if (stream == 2) return "per-thread default";
  return "stream " + hex(stream);
}

std::string render_svg(const ReplayResult& result, const std::string& title) {
  const double duration = std::max<double>(1.0, static_cast<double>(result.duration_ns));
  std::uint64_t top = 1;
  for (const PoolResult& pool : result.pools) top = std::max({top, pool.peak_reserved, pool.peak_used});
  const double plot_width = kWidth - kLeft - kRight;
  const auto x_of = [&](double time) { return kLeft + plot_width * time / duration; };
  const auto y_of = [&](double bytes) { return kChartTop + kChartHeight * (1.0 - bytes / static_cast<double>(top)); };

  // Lanes: streams in order of first allocation; the rest share the last lane.
  std::vector<std::uint64_t> lanes;
  std::map<std::uint64_t, std::size_t> lane_of;
  std::vector<Allocation> allocations = result.allocations;
  std::sort(allocations.begin(), allocations.end(),
            [](const Allocation& a, const Allocation& b) { return a.start_ns < b.start_ns; });
  for (const Allocation& allocation : allocations) {
    if (lane_of.count(allocation.stream) != 0) continue;
    if (lanes.size() < kMaxLanes) {
      lane_of[allocation.stream] = lanes.size();
      lanes.push_back(allocation.stream);
    } else {
      lane_of[allocation.stream] = kMaxLanes - 1;
    }
  }
  std::map<std::uint64_t, std::size_t> color_of;
  for (const PoolResult& pool : result.pools) color_of[pool.handle] = color_of.size() % 8;

  const double lanes_top = kChartTop + kChartHeight + 50;
  const double height = lanes_top + kLaneHeight * static_cast<double>(std::max<std::size_t>(lanes.size(), 1)) + 60;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << number(height)
      << "\" viewBox=\"0 0 " << kWidth << " " << number(height) << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"14\">" << title << "</text>\n";
  // Axes and ticks.
  for (int tick = 0; tick <= 4; ++tick) {
    const double bytes = static_cast<double>(top) * tick / 4.0;
    const double y = y_of(bytes);
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << number(kWidth - kRight) << "\" y1=\"" << number(y) << "\" y2=\""
        << number(y) << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 6 << "\" y=\"" << number(y + 4)
        << "\" text-anchor=\"end\">" << human_bytes(bytes) << "</text>\n";
  }
  for (int tick = 0; tick <= 5; ++tick) {
    const double time = duration * tick / 5.0;
    svg << "<text x=\"" << number(x_of(time)) << "\" y=\"" << number(kChartTop + kChartHeight + 16)
        << "\" text-anchor=\"middle\">" << number(time / 1e6) << " ms</text>\n";
  }
  // Per pool: reserved (dashed) and used (solid), as steps.
  for (const PoolResult& pool : result.pools) {
    const char* color = kColors[color_of[pool.handle]];
    const std::vector<Sample> samples = thin(pool.samples, duration);
    for (int which = 0; which < 2; ++which) {
      std::ostringstream points;
      double last_y = y_of(0);
      points << number(kLeft) << "," << number(last_y);
      for (const Sample& sample : samples) {
        const double x = x_of(static_cast<double>(sample.time_ns));
        const double y = y_of(static_cast<double>(which == 0 ? sample.reserved : sample.used));
        points << " " << number(x) << "," << number(last_y) << " " << number(x) << "," << number(y);
        last_y = y;
      }
      points << " " << number(kWidth - kRight) << "," << number(last_y);
      svg << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\""
          << (which == 0 ? " stroke-dasharray=\"5,3\"" : "") << " points=\"" << points.str() << "\"><title>pool "
          << hex(pool.handle) << (which == 0 ? " reserved" : " used") << "</title></polyline>\n";
    }
  }
  // Legend.
  double legend_x = kLeft;
  for (const PoolResult& pool : result.pools) {
    const char* color = kColors[color_of[pool.handle]];
    svg << "<line x1=\"" << number(legend_x) << "\" x2=\"" << number(legend_x + 20) << "\" y1=\""
        << number(kChartTop + kChartHeight + 32) << "\" y2=\"" << number(kChartTop + kChartHeight + 32)
        << "\" stroke=\"" << color << "\" stroke-width=\"2\"/><text x=\"" << number(legend_x + 24) << "\" y=\""
        << number(kChartTop + kChartHeight + 36) << "\">pool " << hex(pool.handle) << ": used (solid), reserved (dashed), peak "
        << human_bytes(static_cast<double>(pool.peak_reserved)) << "</text>\n";
    legend_x += 420;
  }
  // Lanes.
  for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
    const double y = lanes_top + kLaneHeight * static_cast<double>(lane);
    svg << "<rect x=\"" << kLeft << "\" y=\"" << number(y) << "\" width=\"" << number(plot_width) << "\" height=\""
        << number(kLaneHeight - 2) << "\" fill=\"" << (lane % 2 == 0 ? "#f6f6f6" : "#eeeeee") << "\"/><text x=\""
        << kLeft - 6 << "\" y=\"" << number(y + 14) << "\" text-anchor=\"end\" font-size=\"9\">"
        << (lane == kMaxLanes - 1 && lane_of.size() > kMaxLanes ? std::string("other streams") : stream_name(lanes[lane]))
        << "</text>\n";
  }
  std::vector<Allocation> largest = allocations;
  std::sort(largest.begin(), largest.end(), [](const Allocation& a, const Allocation& b) { return a.size > b.size; });
  if (largest.size() > kMaxBars) largest.resize(kMaxBars);
  for (std::size_t i = 0; i < largest.size(); ++i) {
    const Allocation& allocation = largest[i];
    const double y = lanes_top + kLaneHeight * static_cast<double>(lane_of[allocation.stream]);
    const double x = x_of(static_cast<double>(allocation.start_ns));
    const double width = std::max(0.5, x_of(static_cast<double>(allocation.end_ns)) - x);
    svg << "<rect x=\"" << number(x) << "\" y=\"" << number(y + 2) << "\" width=\"" << number(width)
        << "\" height=\"" << number(kLaneHeight - 6) << "\" fill=\"" << kColors[color_of[allocation.pool]]
        << "\" fill-opacity=\"0.3\"><title>" << human_bytes(static_cast<double>(allocation.size)) << " from "
        << number(static_cast<double>(allocation.start_ns) / 1e6) << " ms to "
        << number(static_cast<double>(allocation.end_ns) / 1e6) << " ms</title></rect>\n";
    if (i < kLabels) {
      svg << "<text x=\"" << number(x + 2) << "\" y=\"" << number(y + 14) << "\" font-size=\"9\">"
          << human_bytes(static_cast<double>(allocation.size)) << "</text>\n";
    }
  }
  svg << "<text x=\"" << kLeft << "\" y=\"" << number(height - 20) << "\" fill=\"#555\">" << allocations.size()
      << " allocations, " << lane_of.size() << " streams; bars: the " << std::min(allocations.size(), kMaxBars)
      << " largest, the " << std::min(allocations.size(), kLabels) << " largest labelled</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

void usage(std::ostream& out) {
  out << "usage: streampool plot TRACE -o FILE.svg|FILE.html [what-if options of streampool replay]\n"
         "  writes .html (a self-contained page) or .svg (the drawing alone), chosen by FILE's extension\n";
}

}  // namespace

int plot_command(const std::vector<std::string>& args) {
  WhatIf what_if;
  std::vector<std::string> rest;
  if (!parse_what_if(args, &what_if, &rest)) return 2;
  std::string path;
  std::string output;
  for (const std::string& arg : rest) {
    if (is_help(arg)) {
      usage(std::cout);
      return 0;
    }
  }
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if ((rest[i] == "-o" || rest[i] == "--output") && i + 1 < rest.size()) {
      output = rest[++i];
    } else if (path.empty() && !rest[i].empty() && rest[i][0] != '-') {
      path = rest[i];
    } else {
      say_not_understood("plot", rest[i]);
      usage(std::cerr);
      return 2;
    }
  }
  const bool html = output.size() > 5 && output.compare(output.size() - 5, 5, ".html") == 0;
  const bool svg = output.size() > 4 && output.compare(output.size() - 4, 4, ".svg") == 0;
  if (path.empty() || output.empty()) {
    std::cerr << "streampool plot: " << (path.empty() ? "no trace named" : "no output file (-o FILE)") << "\n";
    usage(std::cerr);
    return 2;
  }
  if (!html && !svg) {
    std::cerr << "streampool plot: cannot write '" << output
              << "': plot writes .html (a self-contained page) or .svg (the drawing alone), chosen by the extension\n";
    return 2;
  }
  trace::Trace recorded;
  std::string error;
  if (!trace::read_trace(path, &recorded, &error)) {
    std::cerr << "streampool: " << error << "\n";
    return 1;
  }
  const ReplayResult result = replay(recorded, what_if, true, terminal_progress("plot", recorded.records.size()));
  if (result.unrepresentable) {
    std::cerr << "streampool: " << unrepresentable_message(path, recorded, what_if, result) << "\n";
    return 1;
  }
  const std::string title = "streampool: memory over time, process " + std::to_string(recorded.header.pid);
  const std::string drawing = render_svg(result, title);
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  if (html) {
    out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << title
        << "</title></head>\n<body style=\"font-family:sans-serif\">\n"
        << drawing << "<p>From " << path << ": " << result.events << " events; peak reserved "
        << human_bytes(static_cast<double>(result.peak_reserved)) << ", peak used "
        << human_bytes(static_cast<double>(result.peak_used))
        << " (as streampool's engine replays the trace). Hover a line or a bar for details.</p>\n</body></html>\n";
  } else {
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" << drawing;
  }
  out.close();
  if (!out) {
    std::cerr << "streampool plot: cannot write " << output << "\n";
    return 1;
  }
  std::cerr << "streampool plot: wrote " << output << "\n";
  return 0;
}

}  // namespace streampool::cli
