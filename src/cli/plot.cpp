// `streampool plot TRACE -o FILE.svg|FILE.html`: memory over time as the engine replays the
// trace, drawn to be read the way people read memory plots:
//  - per pool, used bytes as a filled area and reserved bytes as a lighter area under a dashed
//    outline, in the pool's colour, on round ticks (1, 2, 5 times a power of ten of one unit);
//  - the time axis zoomed to where memory changes, with the whole run below as an overview
//    that marks the zoomed window;
//  - one lane per stream: the bytes allocated on it and still live, as an area with its own
//    scale, and under it the stream's largest allocations packed into a few rows of bars;
//  - a tooltip (the SVG <title>) on every line, area and bar: sizes, stream, pool, the address
//    the program got, thread, times.
// One self-contained file: no script, no font or style sheet from the network.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "replay.hpp"

namespace streampool::cli {

std::function<void(double)> terminal_progress(const char* what, std::size_t records);

namespace {

constexpr double kWidth = 1200;
constexpr double kLeft = 80;
constexpr double kRight = 24;
constexpr double kChartTop = 56;
constexpr double kChartHeight = 300;
constexpr double kOverviewHeight = 44;
constexpr double kLaneTitle = 15;
constexpr double kLaneArea = 34;
constexpr double kBarRow = 7;
constexpr std::size_t kBarRows = 6;       // per stream: the largest allocations that fit
constexpr std::size_t kMaxLanes = 24;
constexpr std::size_t kMaxBars = 20000;  // in all: the file stays small

// Pool colours: used in the full colour, reserved in a light tint of it.
struct Colour {
  const char* full;
  const char* light;
};
constexpr Colour kColours[] = {{"#1f77b4", "#c6dbef"}, {"#d62728", "#f9c9c9"}, {"#2ca02c", "#c7e9c0"},
                               {"#9467bd", "#dadaeb"}, {"#ff7f0e", "#fdd0a2"}, {"#8c564b", "#e0cfc8"},
                               {"#e377c2", "#f7d3ec"}, {"#17becf", "#c2ecf1"}};

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

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string stream_name(std::uint64_t stream) {
  if (stream == 0) return "legacy default stream";
  if (stream == 2) return "per-thread default stream";
  return "stream " + hex(stream);
}

// A round step for an axis from 0 to `top` with about `ticks` intervals: 1, 2 or 5 times a
// power of ten of `unit`.
double round_step(double top, double unit, int ticks) {
  const double raw = std::max(top / unit / ticks, 1e-9);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= raw) return factor * power * unit;
  }
  return 10 * power * unit;
}

struct ByteAxis {
  double top = 1;   // the axis's top: a whole number of steps
  double step = 1;
  double unit = 1;
  const char* unit_name = "B";
};
ByteAxis byte_axis(double peak) {
  static const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  ByteAxis axis;
  int index = 0;
  while (index < 4 && peak >= 1024.0 * axis.unit) {
    axis.unit *= 1024.0;
    ++index;
  }
  axis.unit_name = kNames[index];
  axis.step = round_step(std::max(peak, 1.0), axis.unit, 5);
  axis.top = std::max(axis.step, std::ceil(peak / axis.step) * axis.step);
  return axis;
}
std::string byte_tick(double bytes, const ByteAxis& axis) {
  char text[32];
  const double value = bytes / axis.unit;
  std::snprintf(text, sizeof text, value == std::floor(value) ? "%.0f %s" : "%.1f %s", value, axis.unit_name);
  return text;
}

// Time ticks: a round step in ns, µs, ms or s, labelled in that unit.
struct TimeAxis {
  double step = 1;
  double unit = 1e6;
  const char* unit_name = "ms";
};
TimeAxis time_axis(double span_ns) {
  TimeAxis axis;
  if (span_ns < 5e3) axis = {1, 1, "ns"};
  else if (span_ns < 5e6) axis = {1, 1e3, "us"};
  else if (span_ns < 5e9) axis = {1, 1e6, "ms"};
  else axis = {1, 1e9, "s"};
  axis.step = round_step(span_ns, axis.unit, 6);
  return axis;
}
std::string time_label(double ns, const TimeAxis& axis) {
  char text[32];
  const double value = ns / axis.unit;
  std::snprintf(text, sizeof text, std::fabs(value - std::round(value)) < 1e-9 ? "%.0f %s" : "%.3g %s", value,
                axis.unit_name);
  return text;
}
std::string milliseconds(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ns / 1e6);
  return text;
}

// A step function (value from each time on) drawn between `begin` and `end`, at most one
// vertical per horizontal pixel: within a pixel, its largest value (peaks stay visible), then its
// last. Returns the points of the outline; `area` closes it down to the baseline.
struct Step {
  double time;
  double value;
};
template <typename XOf, typename YOf>
std::string step_points(const std::vector<Step>& steps, double begin, double end, XOf x_of, YOf y_of, bool area) {
  std::ostringstream points;
  double value = 0;
  std::size_t i = 0;
  while (i < steps.size() && steps[i].time <= begin) value = steps[i++].value;
  const double baseline = y_of(0.0);
  if (area) points << number(x_of(begin)) << "," << number(baseline) << " ";
  points << number(x_of(begin)) << "," << number(y_of(value));
  while (i < steps.size() && steps[i].time <= end) {
    const double pixel = std::floor(x_of(steps[i].time));
    const double before = value;
    double highest = value;
    while (i < steps.size() && steps[i].time <= end && std::floor(x_of(steps[i].time)) == pixel) {
      value = steps[i++].value;
      highest = std::max(highest, value);
    }
    const double x = x_of(steps[i - 1].time);
    points << " " << number(x) << "," << number(y_of(before));
    if (highest != before && highest != value) points << " " << number(x) << "," << number(y_of(highest));
    points << " " << number(x) << "," << number(y_of(value));
  }
  points << " " << number(x_of(end)) << "," << number(y_of(value));
  if (area) points << " " << number(x_of(end)) << "," << number(baseline);
  return points.str();
}

struct Lane {
  std::uint64_t stream = 0;
  std::string name;
  std::vector<const Allocation*> allocations;
  std::vector<Step> live;  // bytes allocated on the stream and not yet freed
  double peak = 0;
  double peak_time = 0;
};

// Narrows [*low, *high] of the sorted `times` by an edge group of at most 2% of them that a gap of
// more than half the whole span separates from the rest, once on each side.
void trim_isolated_edges(const std::vector<double>& times, std::size_t* low, std::size_t* high) {
  const double span = times[*high] - times[*low];
  if (span <= 0) return;
  const std::size_t few = std::max<std::size_t>(1, times.size() / 50);
  for (std::size_t i = *low; i < *low + few && i + 1 <= *high; ++i) {
    if (times[i + 1] - times[i] > span / 2) {
      *low = i + 1;
      break;
    }
  }
  for (std::size_t i = *high; i > *high - std::min(few, *high) && i - 1 >= *low; --i) {
    if (times[i] - times[i - 1] > span / 2) {
      *high = i - 1;
      break;
    }
  }
}

std::string render_svg(const ReplayResult& result, const std::string& title,
                       const std::map<std::uint64_t, std::string>& pool_names) {
  const double duration = std::max<double>(1.0, static_cast<double>(result.duration_ns));
  // The window where memory changes: the first to the last change of any pool, with a margin,
  // less a few changes cut off from the rest by a long quiet stretch (a framework's one allocation
  // at start-up, seconds before its training loop, would otherwise stretch the window over the run).
  std::vector<double> change_times;
  for (const PoolResult& pool : result.pools) {
    for (const Sample& sample : pool.samples) change_times.push_back(static_cast<double>(sample.time_ns));
  }
  std::sort(change_times.begin(), change_times.end());
  double first = 0;
  double last = duration;
  if (!change_times.empty()) {
    std::size_t low = 0;
    std::size_t high = change_times.size() - 1;
    trim_isolated_edges(change_times, &low, &high);
    first = change_times[low];
    last = change_times[high];
  }
  const double margin = std::max((last - first) * 0.02, 1.0);
  const double begin = std::max(0.0, first - margin);
  const double end = std::min(duration, last + margin);
  const bool zoomed = end - begin < duration * 0.9;

  double peak = 1;
  for (const PoolResult& pool : result.pools) {
    peak = std::max({peak, static_cast<double>(pool.peak_reserved), static_cast<double>(pool.peak_used)});
  }
  const ByteAxis bytes = byte_axis(peak);
  const double plot_width = kWidth - kLeft - kRight;
  const auto x_of = [&](double time) { return kLeft + plot_width * (std::clamp(time, begin, end) - begin) / (end - begin); };
  const auto y_of = [&](double value) { return kChartTop + kChartHeight * (1.0 - value / bytes.top); };

  std::map<std::uint64_t, std::size_t> colour_of;
  for (const PoolResult& pool : result.pools) colour_of.emplace(pool.handle, colour_of.size() % 8);
  const auto pool_label = [&](std::uint64_t handle) {
    auto found = pool_names.find(handle);
    return "pool " + hex(handle) + (found != pool_names.end() ? " (" + found->second + ")" : std::string(" (default)"));
  };

  // Lanes: streams in order of first allocation; the rest share the last lane.
  std::vector<Allocation> allocations = result.allocations;
  std::sort(allocations.begin(), allocations.end(),
            [](const Allocation& a, const Allocation& b) { return a.start_ns < b.start_ns; });
  std::vector<Lane> lanes;
  std::map<std::uint64_t, std::size_t> lane_of;
  for (const Allocation& allocation : allocations) {
    auto found = lane_of.find(allocation.stream);
    if (found == lane_of.end()) {
      if (lanes.size() < kMaxLanes) {
        found = lane_of.emplace(allocation.stream, lanes.size()).first;
        lanes.push_back({allocation.stream, stream_name(allocation.stream), {}, {}, 0, 0});
      } else {
        found = lane_of.emplace(allocation.stream, kMaxLanes - 1).first;
        lanes.back().name = "other streams";
      }
    }
    lanes[found->second].allocations.push_back(&allocation);
  }
  for (Lane& lane : lanes) {
    std::vector<std::pair<double, double>> changes;
    for (const Allocation* allocation : lane.allocations) {
      changes.emplace_back(static_cast<double>(allocation->start_ns), static_cast<double>(allocation->size));
      if (allocation->freed) changes.emplace_back(static_cast<double>(allocation->end_ns), -static_cast<double>(allocation->size));
    }
    std::stable_sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    double live = 0;
    for (const auto& [time, delta] : changes) {
      live += delta;
      if (!lane.live.empty() && lane.live.back().time == time) lane.live.back().value = live;
      else lane.live.push_back({time, live});
      if (live > lane.peak) {
        lane.peak = live;
        lane.peak_time = time;
      }
    }
  }
  // Bars: each lane's largest allocations, each in the first of the lane's rows where it
  // overlaps no other bar (by pixel, so that touching bars stay apart).
  std::vector<std::vector<std::pair<const Allocation*, std::size_t>>> bars(lanes.size());
  std::size_t bars_drawn = 0;
  {
    std::vector<const Allocation*> largest;
    for (const Allocation& allocation : allocations) largest.push_back(&allocation);
    std::stable_sort(largest.begin(), largest.end(), [](const Allocation* a, const Allocation* b) { return a->size > b->size; });
    std::vector<std::vector<std::vector<std::pair<double, double>>>> rows(
        lanes.size(), std::vector<std::vector<std::pair<double, double>>>(kBarRows));
    for (const Allocation* allocation : largest) {
      if (bars_drawn == kMaxBars) break;
      const double from = x_of(static_cast<double>(allocation->start_ns));
      const double to = std::max(from + 1.0, x_of(static_cast<double>(allocation->end_ns)));
      if (static_cast<double>(allocation->end_ns) < begin || static_cast<double>(allocation->start_ns) > end) continue;
      const std::size_t lane = lane_of[allocation->stream];
      for (std::size_t row = 0; row < kBarRows; ++row) {
        auto& taken = rows[lane][row];
        const bool free = std::none_of(taken.begin(), taken.end(),
                                       [&](const auto& span) { return from < span.second + 0.5 && span.first < to + 0.5; });
        if (!free) continue;
        taken.emplace_back(from, to);
        bars[lane].emplace_back(allocation, row);
        ++bars_drawn;
        break;
      }
    }
  }

  const double axis_bottom = kChartTop + kChartHeight;
  const double legend_top = axis_bottom + 34;
  const double legend_height = 18.0 * static_cast<double>(std::max<std::size_t>(result.pools.size(), 1));
  const double overview_top = legend_top + legend_height + 18;
  const double lane_height = kLaneTitle + kLaneArea + kBarRow * kBarRows + 10;
  const double lanes_top = overview_top + kOverviewHeight + 40;
  const double height = lanes_top + lane_height * static_cast<double>(std::max<std::size_t>(lanes.size(), 1)) + 40;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << number(height)
      << "\" viewBox=\"0 0 " << kWidth << " " << number(height) << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"15\">" << escaped(title) << "</text>\n";
  const TimeAxis whole_axis = time_axis(duration);
  svg << "<text x=\"" << kLeft << "\" y=\"38\" fill=\"#555\">"
      << (zoomed ? "from " + time_label(begin, whole_axis) + " to " + time_label(end, whole_axis) +
                       ", where memory changes, of a run of " + time_label(duration, whole_axis) + " (below: the whole run)"
                 : "the whole run, " + time_label(duration, whole_axis))
      << "</text>\n";
  // Byte axis and grid.
  for (double tick = 0; tick <= bytes.top + bytes.step / 2; tick += bytes.step) {
    const double y = y_of(tick);
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << number(kWidth - kRight) << "\" y1=\"" << number(y) << "\" y2=\""
        << number(y) << "\" stroke=\"" << (tick == 0 ? "#888" : "#e3e3e3") << "\"/><text x=\"" << kLeft - 6 << "\" y=\""
        << number(y + 4) << "\" text-anchor=\"end\">" << byte_tick(tick, bytes) << "</text>\n";
  }
  // Time axis: round ticks within the window.
  const TimeAxis times = time_axis(end - begin);
  for (double tick = std::ceil(begin / times.step) * times.step; tick <= end; tick += times.step) {
    const double x = x_of(tick);
    svg << "<line x1=\"" << number(x) << "\" x2=\"" << number(x) << "\" y1=\"" << number(axis_bottom) << "\" y2=\""
        << number(axis_bottom + 4) << "\" stroke=\"#888\"/><text x=\"" << number(x) << "\" y=\"" << number(axis_bottom + 16)
        << "\" text-anchor=\"middle\">" << time_label(tick, times) << "</text>\n";
  }
  // Per pool: reserved (light area, dashed outline), then used (full colour) over it.
  for (const PoolResult& pool : result.pools) {
    const Colour colour = kColours[colour_of[pool.handle]];
    std::vector<Step> reserved;
    std::vector<Step> used;
    for (const Sample& sample : pool.samples) {
      reserved.push_back({static_cast<double>(sample.time_ns), static_cast<double>(sample.reserved)});
      used.push_back({static_cast<double>(sample.time_ns), static_cast<double>(sample.used)});
    }
    const std::string name = escaped(pool_label(pool.handle));
    svg << "<polygon fill=\"" << colour.light << "\" fill-opacity=\"0.7\" points=\""
        << step_points(reserved, begin, end, x_of, y_of, true) << "\"><title>" << name << ": reserved, peak "
        << human_bytes(static_cast<double>(pool.peak_reserved)) << "</title></polygon>\n";
    svg << "<polyline fill=\"none\" stroke=\"" << colour.full << "\" stroke-width=\"1.2\" stroke-dasharray=\"5,3\" points=\""
        << step_points(reserved, begin, end, x_of, y_of, false) << "\"/>\n";
    svg << "<polygon fill=\"" << colour.full << "\" fill-opacity=\"0.55\" stroke=\"" << colour.full
        << "\" stroke-width=\"1\" points=\"" << step_points(used, begin, end, x_of, y_of, true) << "\"><title>" << name
        << ": used, peak " << human_bytes(static_cast<double>(pool.peak_used)) << "</title></polygon>\n";
  }
  // Legend: a line per pool.
  double legend_y = legend_top;
  for (const PoolResult& pool : result.pools) {
    const Colour colour = kColours[colour_of[pool.handle]];
    svg << "<rect x=\"" << kLeft << "\" y=\"" << number(legend_y - 9) << "\" width=\"18\" height=\"10\" fill=\""
        << colour.full << "\" fill-opacity=\"0.55\"/><text x=\"" << kLeft + 22 << "\" y=\"" << number(legend_y)
        << "\">used</text><rect x=\"" << kLeft + 56 << "\" y=\"" << number(legend_y - 9)
        << "\" width=\"18\" height=\"10\" fill=\"" << colour.light << "\" stroke=\"" << colour.full
        << "\" stroke-dasharray=\"3,2\"/><text x=\"" << kLeft + 78 << "\" y=\"" << number(legend_y) << "\">reserved</text>"
        << "<text x=\"" << kLeft + 140 << "\" y=\"" << number(legend_y) << "\">" << escaped(pool_label(pool.handle))
        << ": peak reserved " << human_bytes(static_cast<double>(pool.peak_reserved)) << ", peak used "
        << human_bytes(static_cast<double>(pool.peak_used)) << ", " << pool.allocations << " allocations"
        << (pool.failed_allocations != 0 ? ", " + std::to_string(pool.failed_allocations) + " refused" : std::string())
        << "</text>\n";
    legend_y += 18;
  }
  if (result.pools.empty()) svg << "<text x=\"" << kLeft << "\" y=\"" << number(legend_top) << "\">no pool was used</text>\n";
  // Overview: all pools together over the whole run, the window marked.
  {
    std::map<std::uint64_t, std::pair<double, double>> current;
    std::vector<std::tuple<double, std::uint64_t, double, double>> samples;
    for (const PoolResult& pool : result.pools) {
      for (const Sample& sample : pool.samples) {
        samples.emplace_back(static_cast<double>(sample.time_ns), pool.handle, static_cast<double>(sample.reserved),
                             static_cast<double>(sample.used));
      }
    }
    std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    std::vector<Step> reserved;
    std::vector<Step> used;
    double total_reserved = 0;
    double total_used = 0;
    for (const auto& [time, handle, pool_reserved, pool_used] : samples) {
      auto& [was_reserved, was_used] = current[handle];
      total_reserved += pool_reserved - was_reserved;
      total_used += pool_used - was_used;
      was_reserved = pool_reserved;
      was_used = pool_used;
      reserved.push_back({time, total_reserved});
      used.push_back({time, total_used});
    }
    double overview_peak = 1;
    for (const Step& step : reserved) overview_peak = std::max(overview_peak, step.value);
    for (const Step& step : used) overview_peak = std::max(overview_peak, step.value);
    const auto ox = [&](double time) { return kLeft + plot_width * std::clamp(time, 0.0, duration) / duration; };
    const auto oy = [&](double value) { return overview_top + kOverviewHeight * (1.0 - value / overview_peak); };
    svg << "<text x=\"" << kLeft << "\" y=\"" << number(overview_top - 5) << "\" fill=\"#555\">the whole run, all pools ("
        << human_bytes(overview_peak) << " at the top)</text>\n";
    svg << "<rect x=\"" << kLeft << "\" y=\"" << number(overview_top) << "\" width=\"" << number(plot_width)
        << "\" height=\"" << kOverviewHeight << "\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n";
    svg << "<polygon fill=\"#c6dbef\" points=\"" << step_points(reserved, 0, duration, ox, oy, true)
        << "\"><title>all pools: reserved</title></polygon>\n";
    svg << "<polygon fill=\"#1f77b4\" fill-opacity=\"0.55\" points=\"" << step_points(used, 0, duration, ox, oy, true)
        << "\"><title>all pools: used</title></polygon>\n";
    svg << "<rect x=\"" << number(ox(begin)) << "\" y=\"" << number(overview_top) << "\" width=\""
        << number(std::max(1.0, ox(end) - ox(begin))) << "\" height=\"" << kOverviewHeight
        << "\" fill=\"none\" stroke=\"#333\" stroke-width=\"1.5\"><title>the window drawn above</title></rect>\n";
    for (double tick = 0; tick <= duration; tick += whole_axis.step) {
      svg << "<text x=\"" << number(ox(tick)) << "\" y=\"" << number(overview_top + kOverviewHeight + 13)
          << "\" text-anchor=\"middle\" fill=\"#555\" font-size=\"10\">" << time_label(tick, whole_axis) << "</text>\n";
    }
  }
  // Lanes.
  svg << "<text x=\"" << kLeft << "\" y=\"" << number(lanes_top - 10) << "\" font-size=\"13\">per stream (same window as the top): "
      << "bytes allocated and not yet freed, and the largest allocations</text>\n";
  for (std::size_t index = 0; index < lanes.size(); ++index) {
    const Lane& lane = lanes[index];
    const double top = lanes_top + lane_height * static_cast<double>(index);
    const double area_top = top + kLaneTitle;
    const double lane_peak = std::max(lane.peak, 1.0);
    const auto ly = [&](double value) { return area_top + kLaneArea * (1.0 - value / lane_peak); };
    svg << "<text x=\"" << kLeft << "\" y=\"" << number(top + 11) << "\" font-size=\"11\"><tspan font-weight=\"bold\">"
        << escaped(lane.name) << "</tspan>: " << lane.allocations.size() << " allocations, at most "
        << human_bytes(lane.peak) << " live (at " << milliseconds(lane.peak_time) << ")</text>\n";
    svg << "<rect x=\"" << kLeft << "\" y=\"" << number(area_top) << "\" width=\"" << number(plot_width) << "\" height=\""
        << kLaneArea + kBarRow * kBarRows + 4 << "\" fill=\"#f7f7f7\"/>\n";
    svg << "<text x=\"" << kLeft - 6 << "\" y=\"" << number(area_top + 9) << "\" text-anchor=\"end\" font-size=\"9\" fill=\"#555\">"
        << human_bytes(lane.peak) << "</text>\n";
    svg << "<polygon fill=\"#4e79a7\" fill-opacity=\"0.6\" points=\"" << step_points(lane.live, begin, end, x_of, ly, true)
        << "\"><title>" << escaped(lane.name) << ": bytes allocated on it and not yet freed; at most "
        << human_bytes(lane.peak) << " at " << milliseconds(lane.peak_time) << "</title></polygon>\n";
    for (const auto& [allocation, row] : bars[index]) {
      const double from = x_of(static_cast<double>(allocation->start_ns));
      const double to = std::max(from + 1.0, x_of(static_cast<double>(allocation->end_ns)));
      const double y = area_top + kLaneArea + 3 + kBarRow * static_cast<double>(row);
      svg << "<rect x=\"" << number(from) << "\" y=\"" << number(y) << "\" width=\"" << number(to - from)
          << "\" height=\"" << kBarRow - 1.5 << "\" fill=\"" << kColours[colour_of[allocation->pool]].full
          << "\" fill-opacity=\"0.75\"><title>" << human_bytes(static_cast<double>(allocation->size)) << " ("
          << allocation->size << " bytes) on " << escaped(stream_name(allocation->stream)) << ", "
          << escaped(pool_label(allocation->pool)) << ", at " << hex(allocation->address) << " in the program, thread "
          << allocation->thread << "; from " << milliseconds(static_cast<double>(allocation->start_ns))
          << (allocation->freed ? " to " + milliseconds(static_cast<double>(allocation->end_ns)) + " (" +
                                      milliseconds(static_cast<double>(allocation->end_ns - allocation->start_ns)) + ")"
                                : std::string(", still live at the end"))
          << "</title></rect>\n";
    }
  }
  if (lanes.empty()) svg << "<text x=\"" << kLeft << "\" y=\"" << number(lanes_top + 12) << "\">no allocation</text>\n";
  svg << "<text x=\"" << kLeft << "\" y=\"" << number(height - 16) << "\" fill=\"#555\">" << allocations.size()
      << " allocations on " << lane_of.size() << " streams; bars: the " << bars_drawn << " largest that fit in "
      << kBarRows << " rows per stream (all are in the areas). Hover an area or a bar for details.</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

// Names of the pools the program created ("device 0", "host", "managed"); a pool the trace
// never shows created is a default pool.
std::map<std::uint64_t, std::string> pool_names(const trace::Trace& recorded) {
  std::map<std::uint64_t, std::string> names;
  for (const trace::Record& record : recorded.records) {
    if (record.op != static_cast<std::uint16_t>(trace::Op::pool_create) || record.result != 0) continue;
    const std::uint64_t location_type = record.address >> 32;
    const std::uint64_t location_id = record.address & 0xffffffffu;
    std::string name = record.flags == 2 ? "managed" : location_type == 1 ? "device " + std::to_string(location_id)
                                                                          : "host";
    names[record.pool] = "created, " + name;
  }
  return names;
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
  if (any_help(rest)) {
    usage(std::cout);
    return 0;
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
  const std::string drawing = render_svg(result, title, pool_names(recorded));
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  if (html) {
    out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << title
        << "</title></head>\n<body style=\"font-family:sans-serif\">\n"
        << drawing << "<p>From " << escaped(path) << ": " << result.events << " events; peak reserved "
        << human_bytes(static_cast<double>(result.peak_reserved)) << ", peak used "
        << human_bytes(static_cast<double>(result.peak_used))
        << " (as streampool's engine replays the trace). Hover an area or a bar for details.</p>\n</body></html>\n";
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
