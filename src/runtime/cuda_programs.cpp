#include "runtime/cuda_programs.h"

#include <algorithm>
#include <map>

#include "support/error.h"
#include "support/options.h"

namespace coil {

CudaPrograms::CudaPrograms(sched::Schedule s, codegen::GpuProgram gpu, const std::vector<TritonBinary> &binaries,
                           std::vector<std::string> symbols)
    : schedule_(std::move(s)), gpu_(std::move(gpu)), symbols_(std::move(symbols)) {
  kernels_ = load_kernels(gpu_, binaries);
  kept_ = size_t(options::get_int("triton.sizes_kept"));
  // A program set up at a later call reads the options of this compilation, not the
  // caller's of then.
  for (const options::Option &o : options::all()) options_.emplace_back(o.name, options::current(o.name).first);
  if (symbols_.empty()) {
    entries_.push_back({{}, make({})});
    setups_ = 1;
  }
  device_ordinal_ = cuda::Device::get().ordinal();
}

std::shared_ptr<const CudaProgram> CudaPrograms::make(std::span<const int64_t> sizes) const {
  if (symbols_.empty()) return std::make_shared<const CudaProgram>(schedule_, gpu_, kernels_, std::map<std::string, int64_t>{});
  COIL_ASSERT(sizes.size() == symbols_.size(), sizes.size(), " sizes for ", symbols_.size(), " symbols");
  std::map<std::string, int64_t> values;
  for (size_t i = 0; i < sizes.size(); ++i) values[symbols_[i]] = sizes[i];
  options::ScopedOverrides scope(options_);
  sched::Schedule at = schedule_;
  sched::specialize(at, values);
  codegen::GpuProgram gpu = codegen::at_sizes(gpu_, at, values);
  for (codegen::GpuKernel &k : gpu.kernels) k.source.clear();  // loaded already: the code is not kept per size
  return std::make_shared<const CudaProgram>(at, std::move(gpu), kernels_, values);
}

std::shared_ptr<const CudaProgram> CudaPrograms::find(std::span<const int64_t> sizes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (!std::equal(it->sizes.begin(), it->sizes.end(), sizes.begin(), sizes.end())) continue;
    if (it != entries_.begin()) entries_.splice(entries_.begin(), entries_, it);  // called last: first
    return entries_.front().program;
  }
  return nullptr;
}

std::shared_ptr<const CudaProgram> CudaPrograms::at(std::span<const int64_t> sizes) const {
  if (std::shared_ptr<const CudaProgram> found = find(sizes)) return found;
  // Set up outside the lock: another call of other sizes need not wait for it. Two calls of
  // one new size may both set it up; the first to finish is kept.
  std::shared_ptr<const CudaProgram> made = make(sizes);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry &e : entries_)
    if (std::equal(e.sizes.begin(), e.sizes.end(), sizes.begin(), sizes.end())) return e.program;
  entries_.push_front({std::vector<int64_t>(sizes.begin(), sizes.end()), made});
  ++setups_;
  while (entries_.size() > kept_) entries_.pop_back();  // a call still running on it keeps it alive
  return made;
}

int64_t CudaPrograms::setups() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return setups_;
}

std::shared_ptr<const CudaProgram> CudaPrograms::last() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.empty() ? nullptr : entries_.front().program;
}

std::vector<StepTime> CudaPrograms::profile() const {
  std::vector<std::shared_ptr<const CudaProgram>> programs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry &e : entries_) programs.push_back(e.program);
  }
  std::vector<StepTime> out;
  for (const auto &program : programs)
    for (const StepTime &t : program->profile()) {
      auto same = std::find_if(out.begin(), out.end(), [&](const StepTime &o) { return o.name == t.name; });
      if (same == out.end()) {
        out.push_back(t);
        continue;
      }
      same->calls += t.calls;
      same->seconds += t.seconds;
    }
  return out;
}

void CudaPrograms::reset_profile() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry &e : entries_) e.program->reset_profile();
}

}  // namespace coil
