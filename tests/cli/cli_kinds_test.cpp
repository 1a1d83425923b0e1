// The `redlock` binary with the lock kinds: readers (--shared) and a
// semaphore's permits (--permits K) for run, acquire, extend and release, and
// status showing readers and permit holders. Real processes against real
// servers; sections that must overlap meet through files, with bounded waits.
#include "cli/cli_process.hpp"
#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using nlohmann::json;
using redlock_test::cli_process;
using redlock_test::cli_result;
using redlock_test::one_object;
using redlock_test::quoted;
using redlock_test::scaled;
using redlock_test::slurp;
using redlock_test::wait_until;

namespace {

namespace fs = std::filesystem;

/// sh: wait until `file` exists, for at most 20 s; exit 9 if it never does.
auto await_file(const fs::path& file) -> std::string {
    return "i=0; while [ ! -e " + quoted(file.string()) +
           " ]; do i=$((i+1)); [ $i -gt 400 ] && exit 9; sleep 0.05; done";
}

void touch(const fs::path& file) {
    std::ofstream{file} << "go\n";
}

auto files_starting(const fs::path& dir, const std::string& prefix) -> std::size_t {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator{dir})
        n += e.path().filename().string().starts_with(prefix) ? 1 : 0;
    return n;
}

class kinds_cluster : public redlock_test::cli_fixture {
public:
    // As cli_test's fixture: generous timeouts, every invocation a fresh process.
    kinds_cluster()
        : cli_fixture{"redlock-cli-kinds-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 2000}} {}
};

}  // namespace

TEST_SUITE("cli") {
    // ---- run --shared --------------------------------------------------------------------------

    TEST_CASE_FIXTURE(kinds_cluster, "two run --shared at once both hold: their sections overlap") {
        const auto a = dir / "reader-a";
        const auto b = dir / "reader-b";
        auto first =
            start({"--json", "run", "--shared", "--wait-ms", "20000", "--resource", "doc", "--",
                   "sh", "-c", "touch " + quoted(a.string()) + "; " + await_file(b)});
        auto second =
            start({"--json", "run", "--shared", "--wait-ms", "20000", "--resource", "doc", "--",
                   "sh", "-c", "touch " + quoted(b.string()) + "; " + await_file(a)});

        const auto one = first->wait(40s);
        const auto two = second->wait(40s);

        CHECK(one.status == 0);  // 9: it never saw the other reader inside
        CHECK(two.status == 0);
        CHECK(one_object(one).at("kind") == "shared");
        CHECK(one_object(two).at("permit").is_null());
        CHECK(wait_until(scaled(2s), [&] { return total_keys() == 0; }));  // both released
    }

    TEST_CASE_FIXTURE(kinds_cluster, "a writer's run waits for the readers, and excludes them") {
        const auto reading = dir / "reading";
        const auto reader_go = dir / "reader-go";
        const auto writing = dir / "writing";
        const auto writer_go = dir / "writer-go";
        auto reader = start({"run", "--shared", "--resource", "doc", "--", "sh", "-c",
                             "touch " + quoted(reading.string()) + "; " + await_file(reader_go)});
        REQUIRE(wait_until(scaled(10s), [&] { return fs::exists(reading); }));

        auto writer =
            start({"--json", "run", "--wait-ms", "20000", "--resource", "doc", "--", "sh", "-c",
                   "touch " + quoted(writing.string()) + "; " + await_file(writer_go)});
        CHECK(redlock_test::holds_for(500ms, [&] { return !fs::exists(writing); }));
        touch(reader_go);
        CHECK(reader->wait(20s).status == 0);
        REQUIRE(wait_until(scaled(10s), [&] { return fs::exists(writing); }));

        const auto refused =
            redlock({"--json", "acquire", "--shared", "--resource", "doc", "--wait-ms", "200"});
        touch(writer_go);
        const auto wrote = writer->wait(20s);

        CHECK(refused.status == 75);
        CHECK(one_object(refused).at("error").at("code") == "contended");
        CHECK(wrote.status == 0);
        CHECK(one_object(wrote).at("kind") == "exclusive");
    }

    // ---- run --permits -------------------------------------------------------------------------

    TEST_CASE_FIXTURE(kinds_cluster, "run --permits 2 lets exactly two of three in at once") {
        const auto log = dir / "permits.log";
        const auto go = dir / "go";
        const std::string section = "echo start $$ $REDLOCK_PERMIT >> " + quoted(log.string()) +
                                    "; touch " + quoted((dir / "in.").string()) + "$$; " +
                                    await_file(go) + "; echo end $$ >> " + quoted(log.string());
        std::vector<std::unique_ptr<cli_process>> runs;
        for (int i = 0; i < 3; ++i) {
            runs.push_back(start({"--json", "run", "--permits", "2", "--wait-ms", "20000",
                                  "--resource", "pool", "--", "sh", "-c", section}));
        }
        REQUIRE(wait_until(scaled(10s), [&] { return files_starting(dir, "in.") == 2; }));
        CHECK(redlock_test::holds_for(500ms, [&] { return files_starting(dir, "in.") == 2; }));

        touch(go);
        std::vector<cli_result> results;
        for (auto& r : runs) results.push_back(r->wait(40s));

        std::set<int> permits_used;
        for (const auto& r : results) {
            CHECK(r.status == 0);
            const json report = one_object(r);
            CHECK(report.at("kind") == "permit");
            CHECK(report.at("permits") == 2);
            permits_used.insert(report.at("permit").get<int>());
        }
        CHECK(permits_used.size() <= 2);
        CHECK(*permits_used.begin() >= 0);
        CHECK(*permits_used.rbegin() <= 1);
        // Never more than two between a start and its end; distinct permits inside.
        std::istringstream lines{slurp(log)};
        std::set<std::string> inside;
        std::map<std::string, std::string> permit_of;
        std::size_t most = 0;
        std::size_t starts = 0;
        for (std::string line; std::getline(lines, line);) {
            std::istringstream words{line};
            std::string word, pid, permit;
            words >> word >> pid >> permit;
            if (word == "start") {
                ++starts;
                for (const auto& other : inside) CHECK(permit_of[other] != permit);
                inside.insert(pid);
                permit_of[pid] = permit;
            } else {
                inside.erase(pid);
            }
            most = std::max(most, inside.size());
        }
        CHECK(starts == 3);
        CHECK(most == 2);
    }

    // ---- acquire / extend / release by value
    // -----------------------------------------------------

    TEST_CASE_FIXTURE(kinds_cluster, "a reader acquired, extended and released by its value") {
        const auto acquired = redlock({"--json", "acquire", "--shared", "--resource", "doc"});
        REQUIRE(acquired.status == 0);
        const json lock = one_object(acquired);
        const std::string value = lock.at("value");
        CHECK(lock.at("kind") == "shared");
        CHECK(lock.at("permit").is_null());
        CHECK(lock.at("permits").is_null());
        // A majority at least: the process exits once a majority granted.
        REQUIRE(redlock_test::count_reading(*this, key_of("doc"), value) >= 3);

        const auto extended = redlock({"--json", "extend", "--shared", "--resource", "doc",
                                       "--value", value, "--ttl-ms", "30000"});
        REQUIRE(extended.status == 0);
        CHECK(one_object(extended).at("validity_ms").get<long long>() > 25000);
        CHECK(one_object(extended).at("kind") == "shared");
        for (const auto& s : *this)
            CHECK(redlock_test::reader_ms_left(s, key_of("doc"), value) > 20000);

        // Named as a writer's, the value holds nothing: the lock key holds the readers' marker.
        const auto as_writer =
            redlock({"--json", "release", "--resource", "doc", "--value", value});
        CHECK(as_writer.status == 1);
        CHECK(one_object(as_writer).at("error").at("code") == "not_held");

        const auto released =
            redlock({"--json", "release", "--shared", "--resource", "doc", "--value", value});
        REQUIRE(released.status == 0);
        CHECK(one_object(released).at("kind") == "shared");
        CHECK(redlock_test::count_reading(*this, key_of("doc"), value) == 0);
        CHECK(count_holding(key_of("doc")) == 0);  // the last reader out took the marker
    }

    TEST_CASE_FIXTURE(kinds_cluster, "a permit acquired, extended and released by its value") {
        const auto acquired =
            redlock({"--json", "acquire", "--permits", "3", "--resource", "pool"});
        REQUIRE(acquired.status == 0);
        const json lock = one_object(acquired);
        const std::string value = lock.at("value");
        CHECK(lock.at("kind") == "permit");
        CHECK(lock.at("permits") == 3);
        const int permit = lock.at("permit");
        CHECK(permit >= 0);
        CHECK(permit < 3);
        const std::string permit_key = key_of("pool") + "|permit|" + std::to_string(permit);
        REQUIRE(count_holding(permit_key, value) >= 3);
        CHECK(acquired.out.find("\"permit\":" + std::to_string(permit)) != std::string::npos);

        const auto extended = redlock({"--json", "extend", "--permits", "3", "--resource", "pool",
                                       "--value", value, "--ttl-ms", "30000"});
        REQUIRE(extended.status == 0);
        CHECK(one_object(extended).at("kind") == "permit");
        for (const auto& s : *this) CHECK(s.pttl(permit_key) > 20000);

        const auto released = redlock(
            {"--json", "release", "--permits", "3", "--resource", "pool", "--value", value});
        REQUIRE(released.status == 0);
        CHECK(count_holding(permit_key) == 0);
    }

    TEST_CASE_FIXTURE(kinds_cluster,
                      "acquire without --json names the kind and how to release it") {
        const auto reader = redlock({"acquire", "--shared", "--resource", "doc"});
        const auto permit = redlock({"acquire", "--permits", "2", "--resource", "pool"});

        REQUIRE(reader.status == 0);
        CHECK(reader.err.find("acquired reader of 'doc'") != std::string::npos);
        const std::string value = reader.out.substr(0, reader.out.size() - 1);
        CHECK(reader.err.find("--value " + redlock_test::quoted(value) + " --shared") !=
              std::string::npos);
        REQUIRE(permit.status == 0);
        CHECK(permit.err.find(" of 2 of 'pool'") != std::string::npos);
        CHECK(permit.err.find(" --permits 2") != std::string::npos);
    }

    TEST_CASE_FIXTURE(kinds_cluster, "a reader with --fence gets the last writer's token") {
        const json writer =
            one_object(redlock({"--json", "acquire", "--fence", "--resource", "doc"}));
        const std::string value = writer.at("value");
        REQUIRE(redlock({"release", "--resource", "doc", "--value", value}).status == 0);

        const auto reader =
            redlock({"--json", "acquire", "--shared", "--fence", "--resource", "doc"});

        REQUIRE(reader.status == 0);
        const json lock = one_object(reader);
        CHECK(lock.at("kind") == "shared");
        REQUIRE(lock.at("fence").is_number_unsigned());
        CHECK(lock.at("fence").get<std::uint64_t>() >= writer.at("fence").get<std::uint64_t>());
    }

    // ---- status --------------------------------------------------------------------------------

    TEST_CASE_FIXTURE(kinds_cluster,
                      "status shows the readers, and the writer once they are gone") {
        const std::string r1 =
            one_object(redlock({"--json", "acquire", "--shared", "--resource", "doc"})).at("value");
        const std::string r2 =
            one_object(redlock({"--json", "acquire", "--shared", "--resource", "doc"})).at("value");

        const auto machine = redlock({"--json", "status", "--resource", "doc"});
        const auto human = redlock({"status", "--resource", "doc"});

        REQUIRE(machine.status == 0);
        const json view = one_object(machine);
        CHECK(view.at("holder").is_null());  // never the readers' marker
        CHECK(view.at("agreed") == false);
        CHECK(view.at("shared") == true);
        const auto readers = view.at("readers").get<std::set<std::string>>();
        CHECK(readers == std::set<std::string>{r1, r2});
        // Each acquire exited once a majority granted: count the nodes that agree.
        int with_both = 0;
        for (const auto& n : view.at("nodes")) {
            CHECK(n.at("holder").is_null());
            if (n.at("readers").size() != 2) continue;
            ++with_both;
            CHECK(n.at("shared") == true);
            CHECK(n.at("readers")[0].at("ttl_ms").get<long long>() > 0);
        }
        CHECK(with_both >= 3);
        REQUIRE(human.status == 0);
        CHECK(human.out.find("shared by 2 readers") != std::string::npos);
        CHECK(human.out.find(r1) != std::string::npos);
        CHECK(human.out.find(r2) != std::string::npos);

        for (const auto& r : {r1, r2}) {
            REQUIRE(redlock({"release", "--shared", "--resource", "doc", "--value", r}).status ==
                    0);
        }
        const std::string w =
            one_object(redlock({"--json", "acquire", "--resource", "doc"})).at("value");
        const json written = one_object(redlock({"--json", "status", "--resource", "doc"}));
        CHECK(written.at("holder") == w);
        CHECK(written.at("shared") == false);
        CHECK(written.at("readers") == json::array());
        CHECK(redlock({"status", "--resource", "doc"})
                  .out.find("held by " + w.substr(33) + " [value " + w + "]") != std::string::npos);
    }

    TEST_CASE_FIXTURE(kinds_cluster, "status --permits shows each held permit and its holder") {
        const json first =
            one_object(redlock({"--json", "acquire", "--permits", "3", "--resource", "pool"}));
        const json second =
            one_object(redlock({"--json", "acquire", "--permits", "3", "--resource", "pool"}));

        const auto machine = redlock({"--json", "status", "--permits", "3", "--resource", "pool"});
        const auto human = redlock({"status", "--permits", "3", "--resource", "pool"});

        REQUIRE(machine.status == 0);
        const json view = one_object(machine);
        CHECK(view.at("permits") == 3);
        CHECK(view.at("held") == 2);
        // Only permits held somewhere are listed: the free one is left out.
        REQUIRE(view.at("holders").size() == 2);
        for (const auto& h : view.at("holders")) {
            const json& mine = h.at("permit") == first.at("permit") ? first : second;
            CHECK(h.at("permit") == mine.at("permit"));
            CHECK(h.at("holder") == mine.at("value"));
            CHECK(h.at("agreed") == true);
            REQUIRE(h.at("nodes").size() == 5);
            int agreeing = 0;
            for (const auto& n : h.at("nodes")) agreeing += n.at("holder") == mine.at("value");
            CHECK(agreeing >= 3);  // each acquire exited once a majority granted
        }
        for (const auto& n : view.at("nodes")) {
            CHECK((n.at("permits") == 3 || n.at("permits").is_null()));
        }
        REQUIRE(human.status == 0);
        CHECK(human.out.find("semaphore 'pool': 2 of 3 permits held") != std::string::npos);
        for (const auto* l : {&first, &second}) {
            const std::string v = l->at("value");
            CHECK(human.out.find("permit " + std::to_string(l->at("permit").get<int>()) +
                                 ": held by " + v.substr(33) + " [value " + v + "]") !=
                  std::string::npos);
        }
        // Named with another count, the nodes say so.
        const auto other = redlock({"status", "--permits", "4", "--resource", "pool"});
        CHECK(other.out.find("knows this semaphore with 3 permits, not 4") != std::string::npos);
    }

    // ---- usage ---------------------------------------------------------------------------------

    TEST_CASE_FIXTURE(kinds_cluster,
                      "conflicting or out-of-range kind flags exit 64, naming them") {
        struct misuse {
            std::vector<std::string> args;
            std::vector<std::string> named;
        };
        const std::vector<misuse> misuses{
            {{"acquire", "-r", "x", "--shared", "--permits", "2"}, {"--shared", "--permits 2"}},
            {{"run", "-r", "x", "--permits", "2", "--shared", "--", "true"},
             {"--shared", "--permits"}},
            {{"release", "-r", "x", "--value", "v", "--shared", "--permits", "3"},
             {"--shared", "--permits"}},
            {{"extend", "-r", "x", "--value", "v", "--ttl-ms", "9", "--shared", "--permits", "3"},
             {"--shared", "--permits"}},
            {{"acquire", "-r", "x", "--permits", "2", "--fence"}, {"--permits 2", "--fence"}},
            {{"run", "-r", "x", "--fence", "--permits", "2", "--", "true"},
             {"--permits", "--fence"}},
            {{"acquire", "-r", "x", "--permits", "0"}, {"--permits", "not 0"}},
            {{"run", "-r", "x", "--permits", "1025", "--", "true"}, {"--permits", "not 1025"}},
            {{"status", "-r", "x", "--permits", "many"}, {"--permits", "'many'"}},
            {{"release", "-r", "x", "--value", "v", "--permits", "-1"}, {"--permits", "-1"}},
        };
        for (const auto& m : misuses) {
            std::string line;
            for (const auto& a : m.args) line += a + " ";
            INFO("redlock " << line);
            const auto human = redlock(m.args);
            CHECK(human.status == 64);
            for (const auto& name : m.named) CHECK(human.err.find(name) != std::string::npos);

            auto json_args = m.args;
            json_args.insert(json_args.begin(), "--json");
            const auto machine = redlock(json_args);
            CHECK(machine.status == 64);
            CHECK(one_object(machine).at("error").at("code") == "usage");
        }
    }

    TEST_CASE_FIXTURE(kinds_cluster,
                      "the --help of every lock subcommand explains the kind flags") {
        for (const char* sub : {"run", "acquire", "release", "extend"}) {
            INFO(sub);
            const auto help = redlock({sub, "--help"});
            CHECK(help.status == 0);
            CHECK(help.out.find("--shared") != std::string::npos);
            CHECK(help.out.find("--permits") != std::string::npos);
        }
        const auto status = redlock({"status", "--help"});
        CHECK(status.out.find("--permits") != std::string::npos);
        CHECK(status.out.find("readers") != std::string::npos);
        CHECK(redlock({"run", "--help"}).out.find("REDLOCK_PERMIT") != std::string::npos);
    }
}
