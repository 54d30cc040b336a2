// SPDX-License-Identifier: MIT
#include "core/whatif/replay/autocastplan.h"

#include "core/model/runconfig.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

namespace headroom {

namespace {

/// An allocation's dtype as autocast sees it: not floating point, fp32, bf16, or another
/// floating type (fp64, fp16) that autocast leaves alone and that wins a promotion.
enum class Dt : uint8_t { None, Bf16, F32, Wide };

Dt dtOf(std::string_view s)
{
    if (s == "float32" || s == "torch.float32")
        return Dt::F32;
    if (s == "bfloat16" || s == "torch.bfloat16")
        return Dt::Bf16;
    if (s == "float64" || s == "float16" || s == "torch.float64" || s == "torch.float16")
        return Dt::Wide;
    return Dt::None;
}

/// PyTorch 1.13's CPU autocast, probed op by op (tools/autocast_graph_check.py): the ops it
/// runs in bf16, as the dispatch mode sees them (F.linear's addmm, F.conv2d's convolution).
const std::set<std::string_view> kCpuLower{"aten::mm",          "aten::addmm",        "aten::bmm",
                                           "aten::baddbmm",     "aten::addbmm",       "aten::convolution",
                                           "aten::_convolution", "aten::prelu",       "aten::conv_tbc",
                                           "aten::matmul",      "aten::linear"};
/// The ops it runs in fp32, and the Python loss functions it casts whole (their frames in
/// torch/nn/functional.py: F.cross_entropy's log_softmax runs in fp32 too).
const std::set<std::string_view> kCpuFp32{"aten::nll_loss_forward", "aten::nll_loss2d_forward", "aten::mse_loss",
                                          "aten::binary_cross_entropy", "aten::kl_div", "aten::l1_loss",
                                          "aten::smooth_l1_loss", "aten::huber_loss", "aten::soft_margin_loss",
                                          "aten::multilabel_margin_loss_forward", "aten::multi_margin_loss",
                                          "aten::ctc_loss"};
/// CUDA's lists (aten/src/ATen/autocast_mode.h, PyTorch 2.x: AT_FORALL_LOWER_PRECISION_FP,
/// AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE), under the names the CPU recorder's dispatch
/// mode writes (layer_norm reaches it as native_layer_norm, softmax as _softmax).
const std::set<std::string_view> kCudaLower{
    "aten::mm",     "aten::addmm",  "aten::bmm",    "aten::baddbmm", "aten::addbmm",     "aten::convolution",
    "aten::_convolution", "aten::prelu", "aten::conv_tbc", "aten::matmul", "aten::linear", "aten::mv",
    "aten::addmv",  "aten::addr",   "aten::einsum", "aten::chain_matmul", "aten::linalg_multi_dot",
    "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention"};
const std::set<std::string_view> kCudaFp32{
    "aten::acos", "aten::asin", "aten::cosh", "aten::erfinv", "aten::exp", "aten::expm1", "aten::log",
    "aten::log10", "aten::log2", "aten::log1p", "aten::reciprocal", "aten::rsqrt", "aten::sinh", "aten::tan",
    "aten::pow", "aten::softplus", "aten::layer_norm", "aten::native_layer_norm", "aten::group_norm",
    "aten::native_group_norm", "aten::frobenius_norm", "aten::nuclear_norm", "aten::cosine_similarity",
    "aten::poisson_nll_loss", "aten::cosine_embedding_loss", "aten::nll_loss_forward", "aten::nll_loss2d_forward",
    "aten::hinge_embedding_loss", "aten::kl_div", "aten::l1_loss", "aten::smooth_l1_loss", "aten::huber_loss",
    "aten::mse_loss", "aten::margin_ranking_loss", "aten::multilabel_margin_loss_forward",
    "aten::soft_margin_loss", "aten::triplet_margin_loss", "aten::multi_margin_loss",
    "aten::binary_cross_entropy_with_logits", "aten::dist", "aten::_pdist_forward", "aten::_cdist_forward",
    "aten::renorm", "aten::logsumexp"};
/// fp32 "with its dtype set": a 16-bit input makes an fp32 output. softmax and log_softmax
/// convert their input first (an fp32 copy, freed with the op); the reductions do not.
const std::set<std::string_view> kCudaSetOptDtype{"aten::_softmax",    "aten::softmax",   "aten::_log_softmax",
                                                  "aten::log_softmax", "aten::prod",      "aten::cumprod",
                                                  "aten::cumsum",      "aten::sum",       "aten::linalg_vector_norm",
                                                  "aten::linalg_matrix_norm"};
const std::set<std::string_view> kConvertsInput{"aten::_softmax", "aten::softmax", "aten::_log_softmax",
                                                "aten::log_softmax"};
const std::set<std::string_view> kNone{};

struct Lists {
    const std::set<std::string_view>& lower;
    const std::set<std::string_view>& fp32;
    const std::set<std::string_view>& setOptDtype;
};
Lists listsOf(AutocastLists l)
{
    return l == AutocastLists::Cuda ? Lists{kCudaLower, kCudaFp32, kCudaSetOptDtype} : Lists{kCpuLower, kCpuFp32, kNone};
}
const std::set<std::string_view> kLossFunctions{"cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy",
                                                "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss"};
/// The ops whose output takes the widest of their inputs (type promotion); every other op
/// takes its first floating-point input's dtype (a batch norm of a bf16 input beside fp32
/// weights is bf16).
const std::set<std::string_view> kPromote{
    "aten::add", "aten::sub", "aten::rsub", "aten::mul", "aten::div", "aten::true_divide", "aten::floor_divide",
    "aten::remainder", "aten::fmod", "aten::pow", "aten::float_power", "aten::maximum", "aten::minimum",
    "aten::clamp", "aten::where", "aten::lerp", "aten::addcmul", "aten::addcdiv", "aten::atan2", "aten::hypot",
    "aten::xlogy", "aten::copysign", "aten::cat", "aten::stack", "aten::eq", "aten::ne", "aten::lt", "aten::le",
    "aten::gt", "aten::ge", "aten::threshold_backward", "aten::gelu_backward", "aten::silu_backward",
    "aten::sigmoid_backward", "aten::tanh_backward", "aten::hardswish_backward", "aten::leaky_relu_backward",
    "aten::elu_backward", "aten::mish_backward", "aten::softplus_backward", "aten::hardtanh_backward"};

/// The op graph's coverage below which the plan is not made: the rest would be guesses.
constexpr double kMinGraphCoverage = 0.9;

class Planner {
public:
    Planner(const MemoryTimeline& tl, const TraceEvents& ev, const FrameTable& frames, const PhaseAnalysis& phases,
            const std::vector<Annotation>& annotations, bool pure, AutocastLists lists)
        : m_tl(tl), m_ev(ev), m_frames(frames), m_phases(phases), m_annotations(annotations),
          m_strings(frames.strings()), m_pure(pure), m_lists(listsOf(lists))
    {
        m_plan.lists = lists;
    }

    AutocastPlan run()
    {
        AutocastPlan plan;
        if (!index() || !(m_pure || readRegions()) || coverage() < kMinGraphCoverage)
            return plan;
        m_plan.narrowed.assign(m_tl.allocations.size(), 0);
        for (const auto& [event, t] : m_ev.tensors)
            if (const int32_t a = allocAt(event); a >= 0)
                visit(uint32_t(a), event, t);
        for (size_t a = 0; a < m_dt.size(); ++a)
            if (m_dt[a] == Dt::Bf16 && recordedDt(uint32_t(a)) == Dt::F32) {
                m_plan.narrowed[a] = 1;
                ++m_plan.narrowedCount;
            }
        freeEarly();
        m_plan.regions = int64_t(m_regions.size());
        return std::move(m_plan);
    }

private:
    int32_t allocAt(int64_t event) const
    {
        return event >= 0 && size_t(event) < m_allocAt.size() ? m_allocAt[size_t(event)] : -1;
    }
    Dt recordedDt(uint32_t a) const { return m_rec[a] ? dtOf(m_strings.get(m_rec[a]->dtype)) : Dt::None; }
    /// The recorder's phase where it wrote one (its backward window), else the classifier's.
    bool backward(int64_t event) const
    {
        if (const int32_t a = allocAt(event); a >= 0 && m_rec[size_t(a)] &&
                                               m_rec[size_t(a)]->phase != RecordedTensor::Phase::Unknown)
            return m_rec[size_t(a)]->phase == RecordedTensor::Phase::Backward;
        return size_t(event) < m_phases.eventPhase.size() && m_phases.eventPhase[size_t(event)] == Phase::Backward;
    }

    /// The allocation made at each event, each allocation's record, what autograd saved for
    /// whom and each tensor's last use in the forward. False without an op graph.
    bool index()
    {
        bool anyOp = false;
        for (const auto& [event, t] : m_ev.tensors)
            anyOp = anyOp || t.hasOp;
        if (!anyOp)
            return false;
        const size_t n = m_tl.allocations.size();
        m_allocAt.assign(m_ev.count(), -1);
        for (size_t a = 0; a < n; ++a)
            if (const int64_t s = m_tl.allocations[a].start; s >= 0 && size_t(s) < m_allocAt.size())
                m_allocAt[size_t(s)] = int32_t(a);
        m_rec.assign(n, nullptr);
        m_dt.assign(n, Dt::None);
        m_savedBy.assign(n, {});
        m_lastUse.assign(n, -1);
        m_backwardUses.assign(n, {});
        m_copied.assign(n, Dt::None);
        for (const auto& [event, t] : m_ev.tensors)
            if (const int32_t a = allocAt(event); a >= 0) {
                m_rec[size_t(a)] = &t;
                m_dt[size_t(a)] = dtOf(m_strings.get(t.dtype));
            }
        for (const auto& [event, t] : m_ev.tensors)
            link(event, t);
        return true;
    }

    void link(int64_t event, const RecordedTensor& t)
    {
        const int32_t k = allocAt(event);
        if (k < 0)
            return;
        for (int32_t back : t.saves)
            if (const int32_t j = allocAt(event - back); j >= 0)
                m_savedBy[size_t(j)].push_back(uint32_t(k));
        if (backward(event)) {
            for (uint32_t back : t.inputs)
                if (const int32_t j = allocAt(event - int64_t(back)); j >= 0)
                    m_backwardUses[size_t(j)].push_back(event);
            return;
        }
        if (t.kind == RecordedTensor::Kind::Gradient)
            return;
        for (uint32_t back : t.inputs)
            if (const int32_t j = allocAt(event - int64_t(back)); j >= 0)
                m_lastUse[size_t(j)] = std::max(m_lastUse[size_t(j)], event);
    }

    /// The autocast regions, from the recorder's phase windows: each `## forward ##` to the
    /// next `## backward ##` (the loss inside), or without a backward to the end of the last
    /// forward or loss window before the next forward (an inference loop).
    bool readRegions()
    {
        std::vector<int64_t> starts, backwards, ends;
        for (const Annotation& a : m_annotations) {
            if (a.name == "## forward ##")
                (a.start ? starts : ends).push_back(a.timeUs);
            else if (a.name == "## backward ##" && a.start)
                backwards.push_back(a.timeUs);
            else if (a.name == "## loss ##" && !a.start)
                ends.push_back(a.timeUs);
        }
        std::sort(starts.begin(), starts.end());
        std::sort(backwards.begin(), backwards.end());
        std::sort(ends.begin(), ends.end());
        for (size_t i = 0; i < starts.size(); ++i) {
            const int64_t next = i + 1 < starts.size() ? starts[i + 1] : INT64_MAX;
            const auto b = std::upper_bound(backwards.begin(), backwards.end(), starts[i]);
            int64_t end = b != backwards.end() && *b < next ? *b : -1;
            if (end < 0)
                for (int64_t e : ends)
                    if (e > starts[i] && e < next)
                        end = std::max(end, e);
            if (end > starts[i])
                m_regions.emplace_back(eventAt(starts[i]), eventAt(end));
        }
        return !m_regions.empty();
    }
    /// The first event at or after `timeUs` (the recorder's times increase).
    int64_t eventAt(int64_t timeUs) const
    {
        const auto& t = m_ev.timeUs;
        return std::lower_bound(t.begin(), t.end(), timeUs) - t.begin();
    }
    /// Index of the region holding `event`, -1: none.
    int regionOf(int64_t event) const
    {
        auto it = std::upper_bound(m_regions.begin(), m_regions.end(), event,
                                   [](int64_t e, const std::pair<int64_t, int64_t>& r) { return e < r.first; });
        if (it == m_regions.begin())
            return -1;
        --it;
        return event < it->second ? int(it - m_regions.begin()) : -1;
    }

    /// Share of the allocations born in the regions (a pure precision: in the forwards) whose
    /// op the recorder named.
    double coverage() const
    {
        int64_t inside = 0, withOp = 0;
        for (size_t a = 0; a < m_tl.allocations.size(); ++a)
            if (const int64_t s = m_tl.allocations[a].start;
                s >= 0 && (m_pure ? m_rec[a] && m_rec[a]->phase == RecordedTensor::Phase::Forward : regionOf(s) >= 0)) {
                ++inside;
                withOp += m_rec[a] && m_rec[a]->hasOp;
            }
        return inside > 0 ? double(withOp) / double(inside) : 0.0;
    }

    bool inLossFunction(uint32_t a) const
    {
        for (uint32_t f : m_frames.stack(m_tl.allocations[a].stack)) {
            const Frame& fr = m_frames.frame(f);
            const std::string_view file = m_strings.get(fr.file);
            if (file.ends_with("torch/nn/functional.py") && kLossFunctions.count(m_strings.get(fr.name)))
                return true;
        }
        return false;
    }

    void visit(uint32_t k, int64_t event, const RecordedTensor& t)
    {
        const Dt dt = m_dt[k];
        if (dt == Dt::None)
            return;
        // A pure precision outside the graph, and in the backward: every floating-point tensor at
        // the target width (the backward's casts back are no op in the trace, so a flow would
        // keep its gradients fp32 too far).
        if (m_pure && (!t.hasOp || backward(event))) {
            m_dt[k] = dt == Dt::F32 ? Dt::Bf16 : dt;
            return;
        }
        if (!t.hasOp)
            return;
        const std::string_view op = m_strings.get(t.op);
        std::vector<uint32_t> ins;
        for (uint32_t back : t.inputs)
            if (const int32_t j = allocAt(event - int64_t(back)); j >= 0 && m_dt[size_t(j)] != Dt::None)
                ins.push_back(uint32_t(j));
        readCasts(k, event, t);
        const int region = regionOf(event);
        const Dt pin = targetOf(event, t.dtypeArg);
        if (region >= 0 && m_lists.lower.count(op)) {
            m_dt[k] = Dt::Bf16;
            for (uint32_t j : ins)
                if (dtIn(j) == Dt::F32)
                    copyForLower(k, event, j, region);
        } else if (pin != Dt::None || (region >= 0 && (m_lists.fp32.count(op) || inLossFunction(k)))) {
            // a dtype= argument, or an op autocast runs in fp32: its inputs cast to it first
            m_dt[k] = pin != Dt::None ? pin : Dt::F32;
            bool up = false;
            for (uint32_t j : ins)
                if (dtIn(j) != m_dt[k] && dtIn(j) != Dt::Wide) {
                    copyForOp(k, event, j, m_dt[k]);
                    up = up || m_dt[k] == Dt::F32;
                }
            m_plan.fp32Ops += up;
        } else if (region >= 0 && m_lists.setOptDtype.count(op) && !ins.empty() && dtIn(ins.front()) == Dt::Bf16) {
            m_dt[k] = Dt::F32; // CUDA's softmax of a bf16 input: fp32, from an fp32 copy of it
            if (kConvertsInput.count(op))
                m_plan.copies.push_back({event, event + 1, ins.front(), false});
            ++m_plan.fp32Ops;
        } else {
            m_dt[k] = follow(k, event, t, kPromote.count(op) > 0, m_lists.lower.count(op) > 0, ins);
        }
        m_over.clear();
    }

    /// The dtype a cast or a dtype= argument asks for at the target: a literal's, or the
    /// target dtype of the entry it follows.
    Dt targetOf(int64_t event, const RecordedTensor::Cast& c) const
    {
        if (c.dtype)
            return dtOf(m_strings.get(c.dtype));
        if (const int32_t j = c.like ? allocAt(event - int64_t(c.like)) : -1; j >= 0)
            return m_dt[size_t(j)];
        return Dt::None;
    }
    /// The share of storage `j` a cast took (its measured bytes from the recorded dtype's).
    double shareOf(uint32_t j, const RecordedTensor::Cast& c) const
    {
        const int64_t whole = m_tl.allocations[j].size;
        return c.bytes < 0 || whole <= 0 ? 1.0 : std::min(1.0, double(c.bytes) / double(whole));
    }
    /// The dtype op inputs are read at: a no-op cast's where it took the input through one.
    Dt dtIn(uint32_t j) const
    {
        for (const auto& [input, d] : m_over)
            if (input == j)
                return d;
        return m_dt[j];
    }

    /// The no-op casts this op took its inputs through: where the target makes the cast a
    /// real one, a copy of the input at the dtype asked for, made at its first such use and
    /// kept after its last (as long as the input where an op saved it).
    void readCasts(uint32_t k, int64_t event, const RecordedTensor& t)
    {
        for (const RecordedTensor::Cast& c : t.casts) {
            const int32_t j = allocAt(event - int64_t(c.input));
            const Dt to = targetOf(event, c);
            if (j < 0 || to == Dt::None || m_dt[size_t(j)] == Dt::None)
                continue;
            m_over.emplace_back(uint32_t(j), to);
            ++m_plan.recordedCasts;
            if (to == m_dt[size_t(j)] || to == Dt::Wide || m_dt[size_t(j)] == Dt::Wide)
                continue;
            const auto [it, fresh] = m_castCopies.try_emplace({uint32_t(j), to}, m_plan.copies.size());
            if (fresh)
                m_plan.copies.push_back({event, event + 1, uint32_t(j), to == Dt::Bf16, shareOf(uint32_t(j), c)});
            AutocastPlan::Copy& copy = m_plan.copies[it->second];
            const bool saved =
                std::find(m_savedBy[size_t(j)].begin(), m_savedBy[size_t(j)].end(), k) != m_savedBy[size_t(j)].end();
            const int64_t end = saved ? m_tl.allocations[size_t(j)].end : event + 1;
            copy.end = copy.end < 0 || end < 0 ? -1 : std::max(copy.end, end);
            if (saved)
                m_holders[uint32_t(j)].push_back(k);
        }
    }

    /// A bf16 op's fp32 input: a weight's copy once per region (autocast's cache), an
    /// activation's per use; kept as long as the input was where the op saved it.
    void copyForLower(uint32_t k, int64_t event, uint32_t j, int region)
    {
        const bool saved = std::find(m_savedBy[j].begin(), m_savedBy[j].end(), k) != m_savedBy[j].end();
        if (m_rec[j] && m_rec[j]->kind == RecordedTensor::Kind::Parameter) {
            const auto [it, fresh] = m_cached.try_emplace({j, region}, m_plan.copies.size());
            if (fresh) {
                m_plan.copies.push_back({event, m_regions[size_t(region)].second, j, true});
                ++m_plan.weightCopies;
                m_copied[j] = Dt::Bf16;
            }
            if (saved) { // autograd holds the cached copy past the region, for the backward
                AutocastPlan::Copy& c = m_plan.copies[it->second];
                c.end = std::max(c.end, lastBackwardUse(j, region));
            }
            return;
        }
        copyForOp(k, event, j, Dt::Bf16);
    }

    /// An input cast to `to` for op `k`: freed after the op, or kept as long as the input was
    /// where the op saved it (autograd holds the copy; the backward reads it at `to`).
    void copyForOp(uint32_t k, int64_t event, uint32_t j, Dt to)
    {
        const bool saved = std::find(m_savedBy[j].begin(), m_savedBy[j].end(), k) != m_savedBy[j].end();
        if (!saved) {
            m_plan.copies.push_back({event, event + 1, j, to == Dt::Bf16});
            return;
        }
        m_plan.copies.push_back({event, m_tl.allocations[j].end, j, to == Dt::Bf16});
        m_copied[j] = to;
        m_holders[j].push_back(k);
    }

    /// Tensors that every op saving them took through a copy (autograd holds the copies):
    /// freed after their last use in the forward instead of where the backward freed them.
    void freeEarly()
    {
        for (const auto& entry : m_holders) { // no structured binding: a lambda takes it
            const uint32_t j = entry.first;
            const std::vector<uint32_t>& holders = entry.second;
            const auto& savers = m_savedBy[j];
            const bool all = std::all_of(savers.begin(), savers.end(), [&](uint32_t o) {
                return std::find(holders.begin(), holders.end(), o) != holders.end();
            });
            // Only what the recorded run freed (a buffer or a parameter lives on for its module)
            const int64_t end = m_tl.allocations[j].end, early = m_lastUse[j] + 1;
            const bool held = m_rec[j] && (m_rec[j]->kind == RecordedTensor::Kind::Parameter ||
                                           m_rec[j]->kind == RecordedTensor::Kind::Buffer);
            if (all && !savers.empty() && !held && m_lastUse[j] >= 0 && end >= 0 && early < end)
                m_plan.earlyEnds.emplace_back(j, early);
        }
    }

    /// Where autograd lets a weight's cached copy go after region `region`: after the last
    /// backward op before the next region that takes the weight (the fp32 trace's ops that
    /// read it there read its copy under autocast); the region's end where none does.
    int64_t lastBackwardUse(uint32_t j, int region) const
    {
        const int64_t from = m_regions[size_t(region)].second;
        const int64_t to = size_t(region) + 1 < m_regions.size() ? m_regions[size_t(region) + 1].first : INT64_MAX;
        const std::vector<int64_t>& uses = m_backwardUses[j];
        auto it = std::lower_bound(uses.begin(), uses.end(), to);
        return it != uses.begin() && *std::prev(it) >= from ? *std::prev(it) + 1 : from;
    }

    /// Any other op: its first floating-point input's dtype, or the widest where it promotes
    /// (a 0-dim input does not promote a dimensioned one). In the backward an input autocast
    /// copied is read as its bf16 copy, and a bf16 op's gradient op that takes one bf16 input
    /// is bf16 (the gradient reaching it was cast back by the cast's backward). A parameter's gradient keeps the parameter's dtype,
    /// with a temporary at the dtype it was computed in.
    Dt follow(uint32_t k, int64_t event, const RecordedTensor& t, bool promotes, bool lower,
              const std::vector<uint32_t>& ins)
    {
        const Dt recorded = m_dt[k];
        // A pure precision: what no floating-point input decides (a parameter, an input, a
        // tensor made from nothing) is made in bf16, as model.to(torch.bfloat16) leaves it.
        Dt out = m_pure && recorded == Dt::F32 ? Dt::Bf16 : recorded;
        bool any = false;
        for (uint32_t j : ins) {
            if (ins.size() > 1 && m_rec[j] && m_rec[j]->shape.empty())
                continue;
            const Dt d = backward(event) && m_copied[j] != Dt::None ? m_copied[j] : dtIn(j);
            out = !any ? d : promotes ? std::max(out, d) : out;
            any = true;
        }
        if (backward(event) && lower && std::any_of(ins.begin(), ins.end(), [&](uint32_t j) {
                return m_copied[j] == Dt::Bf16 || dtIn(j) == Dt::Bf16;
            }))
            out = Dt::Bf16; // a matmul takes one dtype: its gradient input was cast back too
        if (!m_pure && t.kind == RecordedTensor::Kind::Gradient) {
            if (out == Dt::Bf16 && recorded == Dt::F32)
                m_plan.copies.push_back({event, event + 1, k, true});
            return recorded;
        }
        return out;
    }

    const MemoryTimeline& m_tl;
    const TraceEvents& m_ev;
    const FrameTable& m_frames;
    const PhaseAnalysis& m_phases;
    const std::vector<Annotation>& m_annotations;
    const StringPool& m_strings;
    const bool m_pure;
    std::vector<int32_t> m_allocAt;
    std::vector<const RecordedTensor*> m_rec;
    std::vector<Dt> m_dt;
    std::vector<std::vector<uint32_t>> m_savedBy;
    std::vector<int64_t> m_lastUse;
    std::vector<std::vector<int64_t>> m_backwardUses; ///< events of the backward's ops that take it, in order
    const Lists m_lists;
    std::vector<Dt> m_copied; ///< the dtype of the copy autograd holds for the backward, None: none
    std::vector<std::pair<int64_t, int64_t>> m_regions;
    std::map<std::pair<uint32_t, int>, size_t> m_cached; ///< a weight's copy in a region: its index
    std::map<uint32_t, std::vector<uint32_t>> m_holders; ///< a tensor's savers that took it through a copy
    std::map<std::pair<uint32_t, Dt>, size_t> m_castCopies; ///< a no-op cast's copy: its index
    std::vector<std::pair<uint32_t, Dt>> m_over;            ///< the current op's inputs read through a cast
    AutocastPlan m_plan;
};

} // namespace

AutocastPlan planAutocast(const MemoryTimeline& tl, const TraceEvents& events, const FrameTable& frames,
                          const PhaseAnalysis& phases, const std::vector<Annotation>& annotations, AutocastLists lists)
{
    return Planner(tl, events, frames, phases, annotations, false, lists).run();
}

AutocastPlan planPureFlow(const MemoryTimeline& tl, const TraceEvents& events, const FrameTable& frames,
                          const PhaseAnalysis& phases)
{
    return Planner(tl, events, frames, phases, {}, true, AutocastLists::Cpu113).run();
}

AutocastLists autocastListsFor(const Snapshot& snapshot)
{
    return cpuRecorded(snapshot) && !recordedForGpuTarget(snapshot) ? AutocastLists::Cpu113 : AutocastLists::Cuda;
}

const char* autocastListsName(AutocastLists lists)
{
    return lists == AutocastLists::Cuda ? "CUDA's" : "PyTorch 1.13's CPU";
}

} // namespace headroom
