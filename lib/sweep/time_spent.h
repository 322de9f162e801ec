#pragma once

#include <chrono>
#include <map>
#include <string>

#include "lib/records/records.h"

namespace batchscope {

// Where one sweep session's wall time goes, part by part (kSweepParts), measured around what the sweep
// does and never inside a timed step. Started when made.
class TimeSpent {
 public:
  TimeSpent() : start_(std::chrono::steady_clock::now()) {}

  void add(const std::string& part, double seconds) { seconds_[part] += seconds; }
  // Runs f and adds its wall time to `part`; returns what f returns.
  template <typename F>
  decltype(auto) measure(const std::string& part, F&& f) {
    const auto begin = std::chrono::steady_clock::now();
    struct Add {
      TimeSpent& spent;
      const std::string& part;
      std::chrono::steady_clock::time_point begin;
      ~Add() { spent.add(part, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count()); }
    } add{*this, part, begin};
    return f();
  }

  // The whole so far, and every part in kSweepParts' order, "other" being what the parts leave of it.
  SweepTimeSpent so_far() const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, double> seconds_;
};

}  // namespace batchscope
