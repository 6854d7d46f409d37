#include "analysis/patching/factual_recall.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "datasets/synthetic/capital_facts.h"
#include "datasets/text/held_out_windows.h"
#include "datasets/text/running_text.h"
#include "datasets/text/token_shards.h"

namespace sparse_layers::analysis {
namespace {

constexpr char kPrefix[] = "The capital of ";
constexpr char kSuffix[] = " is";

int64_t Predict(layers::GptImpl& model, const std::vector<int64_t>& prompt) {
  const torch::Tensor tokens = torch::tensor(prompt).view({1, -1});
  return model.forward(tokens)[0][-1].argmax().item<int64_t>();
}

// Facts usable for patching, grouped by prompt length: selected (recalled),
// with the shared prefix tokenised alike, so that within a group every
// position aligns (the same subject token count).
std::map<size_t, std::vector<const Fact*>> UsableFactsByLength(
    const std::vector<Fact>& facts, const std::vector<bool>& recalled,
    const std::vector<int64_t>& prefix) {
  std::map<size_t, std::vector<const Fact*>> groups;
  for (size_t i = 0; i < facts.size(); ++i) {
    const Fact& f = facts[i];
    if (recalled[i] && f.prompt.size() > prefix.size() + 1 &&
        std::equal(prefix.begin(), prefix.end(), f.prompt.begin())) {
      groups[f.prompt.size()].push_back(&f);
    }
  }
  return groups;
}

std::string BlocksName(const std::vector<int>& blocks, int n_layers) {
  return static_cast<int>(blocks.size()) == n_layers && n_layers > 1
             ? "all"
             : absl::StrJoin(blocks, "+");
}

// Pair-weighted sums of one (blocks, position label) cell over length groups.
struct PooledEffect {
  int64_t pairs = 0;
  double nie = 0, flips = 0, patched = 0, clean = 0, counterfactual = 0;
  // The pairs with a third fact: the counterfactual patch's NIE on them and
  // the third fact's (the disruption null).
  int64_t third_fact_pairs = 0;
  double nie_on_third_fact_pairs = 0, third_fact_nie = 0;
  void Add(const analysis::PatchEffect& e, const torch::Tensor& m_clean,
           const torch::Tensor& m_cf) {
    const int64_t n = m_clean.size(0);
    pairs += n;
    nie += n * e.mean_nie;
    flips += n * e.rank_flip_rate;
    patched += n * e.mean_logit_difference;
    clean += m_clean.sum().item<double>();
    counterfactual += m_cf.sum().item<double>();
  }
  void AddThirdFact(const analysis::PatchEffect& counterfactual_patch,
                    const analysis::PatchEffect& third_fact_patch, int64_t n) {
    third_fact_pairs += n;
    nie_on_third_fact_pairs += n * counterfactual_patch.mean_nie;
    third_fact_nie += n * third_fact_patch.mean_nie;
  }
};

// For each ordered pair (clean a, counterfactual b) of `group`, the index of
// a third fact whose answer token is neither a's nor b's (the first after b,
// cyclically), or -1 when the group has none.
std::vector<int> ThirdFacts(const std::vector<const Fact*>& group,
                            const std::vector<std::pair<int, int>>& pairs) {
  std::vector<int> third;
  const int size = static_cast<int>(group.size());
  for (const auto& [a, b] : pairs) {
    int found = -1;
    for (int step = 1; step < size && found < 0; ++step) {
      const int c = (b + step) % size;
      if (group[c]->answer_id != group[a]->answer_id &&
          group[c]->answer_id != group[b]->answer_id) {
        found = c;
      }
    }
    third.push_back(found);
  }
  return third;
}

}  // namespace

absl::StatusOr<std::vector<Fact>> ParseFacts(absl::string_view csv,
                                             const datasets::Tokenizer& tok,
                                             absl::string_view source) {
  ASSIGN_OR_RETURN(const std::vector<datasets::CapitalFact> table,
                   datasets::ParseCapitalFacts(csv, source, kMinFacts));
  std::vector<Fact> facts;
  for (const datasets::CapitalFact& row : table) {
    Fact fact{row.subject, row.answer, {tok.eos_id()}, -1};
    const std::string prompt = absl::StrCat(kPrefix, fact.subject, kSuffix);
    for (int id : tok.Encode(prompt)) fact.prompt.push_back(id);
    const std::vector<int> full =
        tok.Encode(absl::StrCat(prompt, " ", fact.answer));
    // The answer's first token, when the prompt's tokens are a prefix.
    if (full.size() > fact.prompt.size() - 1 &&
        std::equal(fact.prompt.begin() + 1, fact.prompt.end(), full.begin())) {
      fact.answer_id = full[fact.prompt.size() - 1];
    }
    facts.push_back(fact);
  }
  return facts;
}

std::vector<int64_t> PromptPrefix(const datasets::Tokenizer& tok) {
  std::vector<int64_t> prefix = {tok.eos_id()};
  const std::vector<int> probe =
      tok.Encode(absl::StrCat(kPrefix, "X", kSuffix));
  prefix.insert(prefix.end(), probe.begin(), probe.end() - 2);
  return prefix;
}

std::string WordClass(std::string tag) {
  tag = tag.substr(0, tag.find('-'));  // "nn-tl" (title), "vb-hl" ...
  const auto starts = [&](const char* p) { return absl::StartsWith(tag, p); };
  if (starts("np")) return "proper_noun";
  if (starts("nn") || starts("nr")) return "noun";
  if (starts("vb") || starts("be") || starts("do") || starts("hv") ||
      starts("md"))
    return "verb";
  if (starts("jj")) return "adjective";
  if (starts("rb") || starts("ql")) return "adverb";
  if (starts("pp") || starts("wp")) return "pronoun";
  if (starts("at") || starts("dt") || starts("ap") || starts("abn") ||
      starts("wdt"))
    return "determiner";
  if (starts("in") || starts("to")) return "preposition";
  if (starts("cc") || starts("cs")) return "conjunction";
  if (starts("cd") || starts("od")) return "number";
  if (!tag.empty() && !absl::ascii_isalpha(tag[0])) return "punctuation";
  return "other";
}

absl::StatusOr<std::map<std::string, std::string>> BrownLexicon(
    const std::string& brown_dir) {
  std::map<std::string, std::map<std::string, int>> counts;
  std::error_code error;
  std::filesystem::directory_iterator files(brown_dir, error);
  if (error) {
    return absl::NotFoundError(absl::StrCat("Brown corpus directory ",
                                            brown_dir, ": ", error.message()));
  }
  for (const auto& entry : files) {
    const std::string name = entry.path().filename().string();
    if (name.size() != 4 || name[0] != 'c') continue;
    ASSIGN_OR_RETURN(const std::string text,
                     ReadFileToString(entry.path().string()));
    for (absl::string_view item :
         absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
      const size_t slash = item.rfind('/');
      if (slash == absl::string_view::npos || slash == 0) continue;
      ++counts[absl::AsciiStrToLower(item.substr(0, slash))]
              [WordClass(std::string(item.substr(slash + 1)))];
    }
  }
  std::map<std::string, std::string> lexicon;
  for (const auto& [word, classes] : counts) {
    auto best = std::max_element(
        classes.begin(), classes.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    if (best->second >= 3) lexicon[word] = best->first;
  }
  return lexicon;
}

FactRecallTables::FactRecallTables()
    : recall("seed,model,subject,answer,subject_tokens,recalled\n"),
      patching(
          "seed,model,patched,facts,blocks,position,token,pairs,mean_nie,"
          "rank_flip_rate,mean_logit_difference,mean_logit_difference_clean,"
          "mean_logit_difference_counterfactual\n"),
      disruption_null(
          "seed,model,patched,facts,blocks,position,token,third_fact_pairs,"
          "mean_nie_on_third_fact_pairs,third_fact_nie\n"),
      block_contrasts(
          "seed,model,patched,facts,block,token,pairs,mean_nie,"
          "all_blocks_nie,best_other_block,best_other_block_nie\n"),
      neighbours(
          "seed,representation,block,token_id,token,word_class,vectors,"
          "word_class_agreement,shuffled_word_class_agreement,"
          "word_class_agreement_any,same_token_share\n") {}

absl::Status AppendPatching(const std::string& model_name, int64_t seed,
                            layers::GptImpl& model, PatchKind kind,
                            const std::vector<Fact>& facts,
                            const datasets::Tokenizer& tok,
                            const std::vector<int64_t>& prefix,
                            FactRecallTables& tables) {
  std::string* recall_csv = &tables.recall;
  std::string* patching_csv = &tables.patching;
  std::string* contrasts_csv = &tables.block_contrasts;
  torch::NoGradGuard no_grad;
  int correct = 0;
  std::vector<bool> recalled;
  for (const Fact& f : facts) {
    const bool ok = f.answer_id >= 0 && Predict(model, f.prompt) == f.answer_id;
    correct += ok;
    recalled.push_back(ok);
    // eos + prefix + subject + " is": the subject's token count.
    absl::StrAppend(recall_csv, seed, ",", model_name, ",", f.subject, ",",
                    f.answer, ",",
                    static_cast<int64_t>(f.prompt.size()) -
                        static_cast<int64_t>(prefix.size()) - 1,
                    ",", ok ? 1 : 0, "\n");
  }
  const int n_layers = static_cast<int>(model.blocks.size());
  std::vector<std::vector<int>> block_sets;
  for (int b = 0; b < n_layers; ++b) block_sets.push_back({b});
  std::vector<int> all(n_layers);
  for (int b = 0; b < n_layers; ++b) all[b] = b;
  if (n_layers > 1) block_sets.push_back(all);
  // Position labels: the prefix tokens, then the subject's first and last
  // token, then the final token.
  std::vector<std::string> labels;
  for (int64_t id : prefix) labels.push_back(tok.Piece(id));
  labels[0] = "<bos>";
  const int first_label = static_cast<int>(labels.size());
  labels.insert(labels.end(), {"<subject_first>", "<subject>", "<final>"});
  // Pairs of recalled facts; when there is none (a model that recalls at most
  // one fact per prompt length, so at most a few of 50: the recall control
  // then fails and the claims read NOT TESTABLE), every fact with an answer
  // token, as the paper's code does, so that the tables are never empty.
  std::string facts_used = "recalled";
  auto groups = UsableFactsByLength(facts, recalled, prefix);
  const auto has_pair = [](const auto& by_length) {
    for (const auto& [length, group] : by_length) {
      for (const Fact* a : group) {
        for (const Fact* b : group) {
          if (a->answer_id != b->answer_id) return true;
        }
      }
    }
    return false;
  };
  if (!has_pair(groups)) {
    std::vector<bool> answerable;
    for (const Fact& f : facts) answerable.push_back(f.answer_id >= 0);
    groups = UsableFactsByLength(facts, answerable, prefix);
    facts_used = "all";
  }
  std::map<std::pair<int, int>, PooledEffect> pooled;  // (block set, label)
  std::string groups_log;
  for (const auto& [length, group] : groups) {
    std::vector<int64_t> clean, counterfactual, clean_answer, cf_answer;
    std::vector<std::pair<int, int>> pair_facts;
    for (int a = 0; a < static_cast<int>(group.size()); ++a) {
      for (int b = 0; b < static_cast<int>(group.size()); ++b) {
        if (group[a]->answer_id == group[b]->answer_id) continue;
        const std::vector<int64_t>& pa = group[a]->prompt;
        const std::vector<int64_t>& pb = group[b]->prompt;
        clean.insert(clean.end(), pa.begin(), pa.end());
        counterfactual.insert(counterfactual.end(), pb.begin(), pb.end());
        clean_answer.push_back(group[a]->answer_id);
        cf_answer.push_back(group[b]->answer_id);
        pair_facts.emplace_back(a, b);
      }
    }
    const int64_t pairs = static_cast<int64_t>(clean_answer.size());
    if (pairs == 0) continue;
    // The disruption null (issue 44): the clean prompt patched with a third
    // fact's state moves the logit difference only as far as any
    // intervention's damage does, since its answer is neither a's nor b's.
    std::vector<int64_t> third_fact_rows, third_fact_tokens;
    const std::vector<int> third = ThirdFacts(group, pair_facts);
    for (int64_t p = 0; p < pairs; ++p) {
      if (third[p] < 0) continue;
      third_fact_rows.push_back(p);
      const std::vector<int64_t>& pc = group[third[p]]->prompt;
      third_fact_tokens.insert(third_fact_tokens.end(), pc.begin(), pc.end());
    }
    const int64_t subject_tokens =
        static_cast<int64_t>(length) - static_cast<int64_t>(prefix.size()) - 1;
    absl::StrAppend(&groups_log, " ", subject_tokens,
                    "-token subjects: ", group.size(), " facts, ", pairs,
                    " pairs;");
    const torch::Tensor clean_tokens = torch::tensor(clean).view({pairs, -1});
    const torch::Tensor cf_tokens =
        torch::tensor(counterfactual).view({pairs, -1});
    const torch::Tensor ya = torch::tensor(clean_answer);
    const torch::Tensor yb = torch::tensor(cf_answer);
    ASSIGN_OR_RETURN(const RecordedRun clean_run,
                     RunAndRecord(model, clean_tokens));
    ASSIGN_OR_RETURN(const RecordedRun cf_run, RunAndRecord(model, cf_tokens));
    const torch::Tensor m_clean =
        LogitDifference(clean_run.last_logits, ya, yb);
    const torch::Tensor m_cf = LogitDifference(cf_run.last_logits, ya, yb);
    const int64_t third_fact_pairs =
        static_cast<int64_t>(third_fact_rows.size());
    const torch::Tensor rows = torch::tensor(third_fact_rows, torch::kLong);
    RecordedRun third_fact_run;
    torch::Tensor clean_sub, ya_sub, yb_sub, m_clean_sub, m_cf_sub;
    if (third_fact_pairs > 0) {
      ASSIGN_OR_RETURN(
          third_fact_run,
          RunAndRecord(
              model,
              torch::tensor(third_fact_tokens).view({third_fact_pairs, -1})));
      clean_sub = clean_tokens.index_select(0, rows);
      ya_sub = ya.index_select(0, rows);
      yb_sub = yb.index_select(0, rows);
      m_clean_sub = m_clean.index_select(0, rows);
      m_cf_sub = m_cf.index_select(0, rows);
    }
    // Label index -> position in this group's prompts (-1: not present).
    std::vector<int> position(labels.size());
    for (int l = 0; l < first_label; ++l) position[l] = l;
    position[first_label] = subject_tokens > 1 ? first_label : -1;
    position[first_label + 1] = static_cast<int>(length) - 2;
    position[first_label + 2] = static_cast<int>(length) - 1;
    for (size_t s = 0; s < block_sets.size(); ++s) {
      for (size_t l = 0; l < labels.size(); ++l) {
        if (position[l] < 0) continue;
        ASSIGN_OR_RETURN(const torch::Tensor patched,
                         RunPatched(model, clean_tokens, cf_run, kind,
                                    block_sets[s], position[l]));
        PooledEffect& cell = pooled[{static_cast<int>(s), static_cast<int>(l)}];
        cell.Add(
            SummariseEffect(m_clean, m_cf, LogitDifference(patched, ya, yb)),
            m_clean, m_cf);
        if (third_fact_pairs == 0) continue;
        ASSIGN_OR_RETURN(const torch::Tensor patched_by_third_fact,
                         RunPatched(model, clean_sub, third_fact_run, kind,
                                    block_sets[s], position[l]));
        cell.AddThirdFact(
            SummariseEffect(
                m_clean_sub, m_cf_sub,
                LogitDifference(patched.index_select(0, rows), ya_sub, yb_sub)),
            SummariseEffect(
                m_clean_sub, m_cf_sub,
                LogitDifference(patched_by_third_fact, ya_sub, yb_sub)),
            third_fact_pairs);
      }
    }
  }
  std::fprintf(stderr,
               "%s: recalls %d of %zu facts; patching pairs of %s facts by "
               "prompt length:%s\n",
               model_name.c_str(), correct, facts.size(), facts_used.c_str(),
               groups_log.empty() ? " none" : groups_log.c_str());
  const std::string patched =
      kind == PatchKind::kRouting ? "routing" : "ffn_hidden";
  for (const auto& [cell, e] : pooled) {
    const double n = static_cast<double>(e.pairs);
    const std::string key = absl::StrCat(
        seed, ",", model_name, ",", patched, ",", facts_used, ",",
        BlocksName(block_sets[cell.first], n_layers), ",", cell.second, ",",
        absl::StrReplaceAll(labels[cell.second], {{",", "<comma>"}}));
    absl::StrAppend(
        patching_csv, key, ",", e.pairs, ",",
        absl::StrFormat("%.4f,%.4f,%.4f,%.4f,%.4f", e.nie / n, e.flips / n,
                        e.patched / n, e.clean / n, e.counterfactual / n),
        "\n");
    if (e.third_fact_pairs == 0) continue;
    const double t = static_cast<double>(e.third_fact_pairs);
    absl::StrAppend(&tables.disruption_null, key, ",", e.third_fact_pairs, ",",
                    absl::StrFormat("%.4f,%.4f", e.nie_on_third_fact_pairs / t,
                                    e.third_fact_nie / t),
                    "\n");
  }
  // Fig. 7's block claims as columns of each single block's row: the NIE of
  // patching all blocks ("outsized") and of the best other single block
  // ("strongest for the second layer"), at the same position.
  const int all_set = n_layers > 1 ? n_layers : -1;
  for (int b = 0; b < n_layers && all_set >= 0; ++b) {
    for (size_t l = 0; l < labels.size(); ++l) {
      const auto mean_nie = [&](int set) {
        const PooledEffect& e = pooled.at({set, static_cast<int>(l)});
        return e.nie / static_cast<double>(e.pairs);
      };
      if (!pooled.count({b, static_cast<int>(l)})) continue;
      int best_other = -1;
      for (int o = 0; o < n_layers; ++o) {
        if (o != b && (best_other < 0 || mean_nie(o) > mean_nie(best_other))) {
          best_other = o;
        }
      }
      absl::StrAppend(
          contrasts_csv, seed, ",", model_name, ",", patched, ",", facts_used,
          ",", b, ",", absl::StrReplaceAll(labels[l], {{",", "<comma>"}}), ",",
          pooled.at({b, static_cast<int>(l)}).pairs, ",",
          absl::StrFormat("%.4f,%.4f,%d,%.4f", mean_nie(b), mean_nie(all_set),
                          best_other, mean_nie(best_other)),
          "\n");
    }
  }
  return absl::OkStatus();
}

std::vector<std::vector<Neighbour>> NearestByCosine(
    const torch::Tensor& vectors, const std::vector<int64_t>& queries,
    const std::vector<int64_t>& database, int k) {
  const torch::Tensor unit = torch::nn::functional::normalize(
      vectors.to(torch::kDouble),
      torch::nn::functional::NormalizeFuncOptions().dim(1).eps(1e-12));
  const torch::Tensor similarity = torch::matmul(
      unit.index_select(0, torch::tensor(queries, torch::kLong)),
      unit.index_select(0, torch::tensor(database, torch::kLong)).t());
  const int64_t kept = std::min<int64_t>(k, similarity.size(1));
  const auto [best, index] = similarity.topk(kept, 1);
  std::vector<std::vector<Neighbour>> nearest(queries.size());
  for (size_t q = 0; q < queries.size(); ++q) {
    for (int64_t j = 0; j < kept; ++j) {
      nearest[q].push_back({database[index[q][j].item<int64_t>()],
                            1 - best[q][j].item<double>()});
    }
  }
  return nearest;
}

namespace {

// The circuits listing of AppendNeighbours (sgatlin Fig. 6, Table 3).
std::string NeighbourCircuits(int64_t seed, int block, layers::GptImpl& sparse,
                              const layers::ProductTopK& routing, int64_t width,
                              const torch::Tensor& tokens,
                              const datasets::Tokenizer& tok,
                              const NeighbourOptions& options) {
  const int64_t length = tokens.size(1);
  const torch::Tensor gating = GatingVectors(
      routing.indices.select(1, 0), routing.scores.select(1, 0), width);
  const torch::Tensor flat = tokens.reshape({-1}).contiguous();
  const std::vector<int64_t> ids(flat.data_ptr<int64_t>(),
                                 flat.data_ptr<int64_t>() + flat.numel());
  std::vector<int64_t> queries, database;
  const int64_t last_query =
      std::min<int64_t>(options.circuit_positions, length - 1);
  for (int64_t t = 1; t <= last_query; ++t) queries.push_back(t);
  // Every position, the query's own window included; its self-match dropped.
  for (int64_t i = 0; i < flat.numel(); ++i) database.push_back(i);
  std::vector<std::vector<Neighbour>> nearest =
      NearestByCosine(gating, queries, database, options.neighbours + 1);
  for (size_t q = 0; q < queries.size(); ++q) {
    std::vector<Neighbour>& mine = nearest[q];
    mine.erase(
        std::remove_if(mine.begin(), mine.end(),
                       [&](const Neighbour& n) { return n.row == queries[q]; }),
        mine.end());
    if (static_cast<int>(mine.size()) > options.neighbours) {
      mine.resize(options.neighbours);
    }
  }
  const torch::Tensor logits = sparse.forward(tokens);
  const auto context = [&](int64_t row) {
    const int64_t start = row - row % length;
    return datasets::MarkedContext(
        tok, absl::MakeConstSpan(ids).subspan(start, length), row - start, 5,
        5);
  };
  std::string text = absl::StrFormat(
      "seed %d, block %d (penultimate): the %d nearest channel-0 gating "
      "vectors of each position of one held-out window among the %d "
      "positions of %d windows, itself left out (cosine distance | 5 tokens "
      "either side of [[the token]] | the model's top-5 next tokens there)\n",
      seed, block, options.neighbours, database.size(), tokens.size(0));
  for (size_t q = 0; q < queries.size(); ++q) {
    absl::StrAppend(&text, "pos ", queries[q], ": ", context(queries[q]), "\n");
    for (const Neighbour& n : nearest[q]) {
      const torch::Tensor top =
          std::get<1>(logits[n.row / length][n.row % length].topk(5));
      std::vector<std::string> next;
      for (int64_t j = 0; j < top.size(0); ++j) {
        next.push_back(absl::StrReplaceAll(
            datasets::PieceInRunningText(
                tok, static_cast<int>(top[j].item<int64_t>())),
            {{"\n", " "}}));
      }
      absl::StrAppendFormat(&text, "  %.4f | %s |%s\n", n.distance,
                            context(n.row), absl::StrJoin(next, " ·"));
    }
  }
  return text;
}

}  // namespace

absl::Status AppendNeighbours(int64_t seed, layers::GptImpl& sparse,
                              layers::GptImpl& dense,
                              const datasets::Tokenizer& tok,
                              const std::map<std::string, std::string>& lexicon,
                              const NeighbourOptions& options,
                              FactRecallTables& tables) {
  torch::NoGradGuard no_grad;
  std::string* csv = &tables.neighbours;
  ASSIGN_OR_RETURN(auto shards,
                   datasets::TokenShardSet::Open(options.tokens_manifest));
  ASSIGN_OR_RETURN(const datasets::HeldOutWindows held_out,
                   datasets::ReadHeldOutWindows(*shards, options.windows, 128));
  const int windows = held_out.count;
  const torch::Tensor tokens = torch::tensor(held_out.ids).view({windows, 128});
  ASSIGN_OR_RETURN(const RecordedRun sparse_run, RunAndRecord(sparse, tokens));
  ASSIGN_OR_RETURN(const RecordedRun dense_run, RunAndRecord(dense, tokens));
  // Word class per token: punctuation pieces and "▁word" pieces in the
  // lexicon; every other token is left out.
  std::map<std::string, int> class_ids;
  std::vector<std::string> class_names;
  std::vector<int64_t> kept;
  std::vector<int> word_class, token_id;
  for (int64_t i = 0; i < static_cast<int64_t>(held_out.ids.size()); ++i) {
    const std::string piece = tok.Piece(static_cast<int>(held_out.ids[i]));
    std::string cls;
    if (piece == "." || piece == "," || piece == ";" || piece == ":" ||
        piece == "!" || piece == "?") {
      cls = "punctuation";
    } else if (const std::string word =
                   tok.WordOfPiece(static_cast<int>(held_out.ids[i]));
               !word.empty()) {
      auto it = lexicon.find(absl::AsciiStrToLower(word));
      if (it != lexicon.end()) cls = it->second;
    }
    if (cls.empty()) continue;
    kept.push_back(i);
    if (class_ids.emplace(cls, class_names.size()).second) {
      class_names.push_back(cls);
    }
    word_class.push_back(class_ids.at(cls));
    token_id.push_back(static_cast<int>(held_out.ids[i]));
  }
  const torch::Tensor rows = torch::tensor(kept);
  const int k = options.neighbours;
  std::map<int, int> class_of_token;
  for (size_t i = 0; i < kept.size(); ++i) {
    class_of_token[token_id[i]] = word_class[i];
  }
  const torch::Tensor embeddings = sparse.token_embedding->weight.index_select(
      0, torch::tensor(std::vector<int64_t>(token_id.begin(), token_id.end())));
  const auto product_key = ProductKeyLayers(sparse);
  for (int b = 0; b < static_cast<int>(sparse.blocks.size()); ++b) {
    const layers::ProductTopK& r = sparse_run.routing[b];
    if (!r.scores.defined()) continue;
    // Channel 0, as the paper's circuit database (arXiv:2606.07414 Sec. 4.1).
    const torch::Tensor gating =
        GatingVectors(r.indices.select(1, 0).index_select(0, rows),
                      r.scores.select(1, 0).index_select(0, rows),
                      product_key[b]->options().d_ffn);
    const torch::Tensor& hidden = dense_run.ffn_hidden.at(b);
    const torch::Tensor ffn =
        hidden.reshape({-1, hidden.size(-1)}).index_select(0, rows);
    for (const auto& [name, vectors] :
         std::vector<std::pair<std::string, torch::Tensor>>{
             {"sgatlin_gating", gating},
             {"dense_ffn_hidden", ffn},
             {"input_embedding", embeddings}}) {
      const auto other_token = MeanAgreementByGroup(
          NeighbourAgreementPerVector(vectors, word_class, &token_id, k, 1),
          token_id);
      const auto any = MeanAgreementByGroup(
          NeighbourAgreementPerVector(vectors, word_class, nullptr, k, 1),
          token_id);
      const auto same_token = MeanAgreementByGroup(
          NeighbourAgreementPerVector(vectors, token_id, nullptr, k, 1),
          token_id);
      for (size_t t = 0; t < other_token.size(); ++t) {
        const int id = other_token[t].group;
        absl::StrAppend(
            csv, seed, ",", name, ",", b, ",", id, ",",
            absl::StrReplaceAll(tok.Piece(id), {{",", "<comma>"}}), ",",
            class_names[class_of_token.at(id)], ",", other_token[t].vectors,
            ",",
            absl::StrFormat("%.4f,%.4f,%.4f,%.4f", other_token[t].agreement,
                            other_token[t].shuffled, any[t].agreement,
                            same_token[t].agreement),
            "\n");
      }
    }
  }
  // The penultimate block with routing (the paper's layer 2 of 4).
  int penultimate = -1;
  for (int b = 0; b + 1 < static_cast<int>(sparse.blocks.size()); ++b) {
    if (sparse_run.routing[b].scores.defined()) penultimate = b;
  }
  if (penultimate >= 0 && windows >= 2) {
    tables.circuits = NeighbourCircuits(
        seed, penultimate, sparse, sparse_run.routing[penultimate],
        product_key[penultimate]->options().d_ffn, tokens, tok, options);
  } else {
    tables.circuits = absl::StrCat(
        "seed ", seed,
        ": no circuits listing (it needs a routed block before the last and "
        "two held-out windows)\n");
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers::analysis
