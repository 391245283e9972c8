// Every strategy's parallel.<name>.* section, declared in its own folder, in the one schema: parsed with the common
// keys' error quality, checked, written back; parallel.strategy accepts the registry's names.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "core/config/config.h"
#include "core/config/schema.h"
#include "kernels/common/error.h"
#include "parallel/atom/config.h"
#include "parallel/flexsp/config.h"
#include "parallel/lasp/config.h"
#include "parallel/select/registry.h"
#include "parallel/static_sp/config.h"
#include "support/config_errors.h"

using namespace trident;
using trident::test::check_config_error;

// The sections come with trident_config, so a program that links no strategy (a checkpoint tool) reads every key;
// parallel.strategy accepts exactly the names of the registry's families.
TEST_CASE("every strategy folder's keys are in the schema, and parallel.strategy accepts the registry's names",
          "[select][config]") {
  const std::vector<std::string> keys = config_keys();
  for (const char* key :
       {"parallel.sp.size", "parallel.lasp.variant", "parallel.flexsp.solver", "parallel.atom.prefetch"})
    CHECK(std::find(keys.begin(), keys.end(), key) != keys.end());
  std::vector<std::string> registered = {"auto"};
  for (const StrategyEntry* entry : strategy_entries())
    registered.insert(registered.end(), entry->names.begin(), entry->names.end());
  std::vector<std::string> accepted;
  for (const Key& key : schema())
    if (key.path == "parallel.strategy")
      for (std::string_view name : std::get<StringField>(key.field).choices) accepted.emplace_back(name);
  std::sort(registered.begin(), registered.end());
  std::sort(accepted.begin(), accepted.end());
  CHECK(accepted == registered);
}

TEST_CASE("a strategy's section parses with the file, line and key, and writes back", "[select][config]") {
  const Config c =
      parse_config("parallel:\n  strategy: atom\n  atom:\n    sub_models: 3\n  flexsp:\n    solver: milp\n", "x.yaml",
                   {"parallel.sp.size=4"});
  CHECK(c.parallel.strategy == "atom");
  CHECK(atom_config(c).sub_models == 3);
  CHECK(flexsp_config(c).solver == "milp");
  CHECK(sp_config(c).size == 4);
  CHECK(atom_config(Config{}).sub_models == 0);  // a section never set reads as its defaults
  CHECK(c != Config{});
  CHECK(parse_config(to_yaml(c), "resolved.yaml") == c);
  CHECK(parse_config(to_yaml(Config{}), "defaults.yaml") == Config{});
  check_config_error([] { parse_config("parallel:\n  atom:\n    sub_modles: 3\n", "bad.yaml"); },
                     {"bad.yaml:3:5: unknown key 'parallel.atom.sub_modles' (did you mean 'parallel.atom.sub_models'?)",
                      "keys in 'parallel.atom'"});
  check_config_error([] { parse_config("", "bad.yaml", {"parallel.atom.outer_momentum=1"}); },
                     {"parallel.atom.outer_momentum: 1 is out of range (allowed: 0 <= value < 1)"});
  check_config_error([] { parse_config("parallel:\n  atom:\n    averaging: diloco\n", "bad.yaml"); },
                     {"parallel.atom.averaging = diloco (bad.yaml:3:16) needs rounds: set parallel.atom.average_every "
                      "= 0 (default)"});
  check_config_error([] { parse_config("parallel:\n  strategy: atomm\n", "bad.yaml"); },
                     {"bad.yaml:2:13: parallel.strategy: 'atomm' is not allowed (allowed: auto, atom, flexsp, "
                      "pipeline, dp, sp, lasp)"});
}

// LASP's variants are lasp1 and lasp2 ("ring" names Ring Attention alone); configs written with the old names still
// read, as the new ones, and write back the new ones.
TEST_CASE("parallel.lasp.variant's old names ring and allgather read as lasp1 and lasp2", "[select][config]") {
  CHECK(lasp_config(parse_config("parallel:\n  lasp:\n    variant: ring\n", "old.yaml")).variant == "lasp1");
  const Config c = parse_config("", "x.yaml", {"parallel.lasp.variant=allgather"});
  CHECK(lasp_config(c).variant == "lasp2");
  CHECK(to_yaml(c).find("variant: lasp2") != std::string::npos);
  CHECK(lasp_config(Config{}).variant == "lasp1");
  check_config_error([] { parse_config("parallel:\n  lasp:\n    variant: tree\n", "bad.yaml"); },
                     {"bad.yaml:3", "parallel.lasp.variant", "'tree' is not allowed (allowed: lasp1, lasp2, auto)"});
}
