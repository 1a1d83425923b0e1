// One quorum member listed twice, or one server in two roles, refused when the config is
// loaded (issue 38, item 9): the same Redis Cluster twice, the same Sentinel-managed master
// twice, a cluster seed that is also a standalone node, a Sentinel that is also a data node.
// Every error names a JSON pointer that exists in the document, and words that fit members.

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <redlock/config.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

struct overlap_case {
    const char* name;
    const char* json;
    const char* field;
    std::vector<const char*> fragments;
};

auto overlap_has(const std::string& text, const std::string& part) -> bool {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("config: a member listed twice or a server in two roles is refused, by its pointer") {
    const std::vector<overlap_case> cases{
        {"the same cluster twice",
         R"({"clusters": [{"seeds": [{"host": "127.0.0.1", "port": 7711},
                                     {"host": "127.0.0.1", "port": 7712}]},
                          {"seeds": [{"host": "127.0.0.1", "port": 7712}]}]})",
         "/clusters/1/seeds/0",
         {"127.0.0.1:7712 is also /clusters/0/seeds/1", "the same Redis Cluster listed twice",
          "one quorum member however many seeds name it"}},
        {"the same cluster twice, under another spelling",
         R"({"clusters": [{"seeds": [{"host": "127.0.0.1", "port": 7711}]},
                          {"seeds": [{"host": "10.0.0.9", "port": 7000},
                                     {"host": "localhost", "port": 7711}]}]})",
         "/clusters/1/seeds/1",
         {"localhost:7711 is the same server as /clusters/0/seeds/0 (127.0.0.1:7711; localhost "
          "is the loopback address",
          "the same Redis Cluster listed twice"}},
        {"a seed twice in one cluster",
         R"({"clusters": [{"seeds": [{"host": "127.0.0.1", "port": 7711},
                                     {"host": "127.0.0.1", "port": 7711}]}]})",
         "/clusters/0/seeds/1",
         {"duplicate of /clusters/0/seeds/0 (127.0.0.1:7711)"}},
        {"a cluster seed that is also a standalone node",
         R"({"nodes": [{"host": "127.0.0.1", "port": 7001}, {"host": "127.0.0.1", "port": 7002}],
             "clusters": [{"seeds": [{"host": "127.0.0.1", "port": 7101},
                                     {"host": "127.0.0.1", "port": 7002}]}]})",
         "/clusters/0/seeds/1",
         {"127.0.0.1:7002 is also /nodes/1",
          "cannot be both a standalone member (\"nodes\") and a node of a Redis Cluster"}},
        {"a cluster seed that is a standalone node's Unix socket",
         R"({"nodes": [{"unix": "/run/redis/a.sock"}],
             "clusters": [{"seeds": [{"unix": "/run//redis/a.sock"}]}]})",
         "/clusters/0/seeds/0",
         {"unix:/run//redis/a.sock is the same server as /nodes/0 (unix:/run/redis/a.sock; ",
          "one path"}},
        {"the same Sentinel-managed master twice",
         R"({"sentinel_masters": [
               {"sentinels": [{"host": "10.0.3.1", "port": 26379},
                              {"host": "10.0.3.2", "port": 26379}], "master_name": "locks"},
               {"sentinels": [{"host": "10.0.3.2", "port": 26379}], "master_name": "locks"}]})",
         "/sentinel_masters/1/master_name",
         {"\"locks\" is also /sentinel_masters/0/master_name",
          "/sentinel_masters/1/sentinels/0: 10.0.3.2:26379 is also /sentinel_masters/0/sentinels/1",
          "the same Sentinel-managed master listed twice"}},
        {"a Sentinel twice in one member",
         R"({"sentinel_masters": [{"sentinels": [{"host": "10.0.3.1", "port": 26379},
                                                  {"host": "10.0.3.1.", "port": 26379}],
                                   "master_name": "locks"}]})",
         "/sentinel_masters/0/sentinels/1",
         {"10.0.3.1.:26379 is the same server as /sentinel_masters/0/sentinels/0"}},
        {"a Sentinel that is also a standalone node",
         R"({"nodes": [{"host": "127.0.0.1", "port": 26379}],
             "sentinel_masters": [{"sentinels": [{"host": "127.0.0.1", "port": 26379}],
                                   "master_name": "locks"}]})",
         "/sentinel_masters/0/sentinels/0",
         {"127.0.0.1:26379 is also /nodes/0", "cannot be both a Sentinel and a data node"}},
        {"a Sentinel that is also a cluster seed",
         R"({"clusters": [{"seeds": [{"host": "127.0.0.1", "port": 7101}]}],
             "sentinel_masters": [{"sentinels": [{"host": "127.0.0.1", "port": 7101}],
                                   "master_name": "locks"}]})",
         "/sentinel_masters/0/sentinels/0",
         {"127.0.0.1:7101 is also /clusters/0/seeds/0", "a Sentinel and a data node"}},
    };
    for (const overlap_case& c : cases) {
        CAPTURE(c.name);
        const auto parsed = redlock::parse_config(c.json, "members.json");
        REQUIRE_FALSE(parsed.has_value());
        const redlock::config_error& e = parsed.error();
        CHECK(e.file == "members.json");
        CHECK(e.field == c.field);
        // The pointer names a value of this very file.
        CHECK(json::parse(c.json).contains(json::json_pointer(e.field)));
        for (const char* fragment : c.fragments)
            CHECK_MESSAGE(overlap_has(e.message, fragment), e.message);
        // Not the words of standalone nodes that a client compares by run_id.
        CHECK_FALSE(overlap_has(e.message, "SAME SERVER"));
        CHECK_FALSE(overlap_has(e.message, " servers"));
    }
}

TEST_CASE("config: members that may be different servers are accepted") {
    const char* accepted[] = {
        // Three clusters, and a cluster beside standalone masters on other ports.
        R"({"clusters": [{"seeds": [{"host": "127.0.0.1", "port": 7101}]},
                         {"seeds": [{"host": "127.0.0.1", "port": 7201}]},
                         {"seeds": [{"host": "127.0.0.1", "port": 7301}]}]})",
        R"({"nodes": [{"host": "127.0.0.1", "port": 7001}],
            "clusters": [{"seeds": [{"host": "127.0.0.2", "port": 7001}]}]})",
        // One Sentinel group monitoring three masters (configs/sentinel.json).
        R"({"sentinel_masters": [
              {"sentinels": [{"host": "127.0.0.1", "port": 26401}], "master_name": "locks-a"},
              {"sentinels": [{"host": "127.0.0.1", "port": 26401}], "master_name": "locks-b"},
              {"sentinels": [{"host": "127.0.0.1", "port": 26401}], "master_name": "locks-c"}]})",
        // Two groups that both call their master "mymaster": nothing in the file joins them.
        R"({"sentinel_masters": [
              {"sentinels": [{"host": "10.0.3.1", "port": 26379}], "master_name": "mymaster"},
              {"sentinels": [{"host": "10.0.4.1", "port": 26379}], "master_name": "mymaster"}]})",
        // Sentinel names are case-sensitive: "Locks" is another master.
        R"({"sentinel_masters": [
              {"sentinels": [{"host": "10.0.3.1", "port": 26379}], "master_name": "locks"},
              {"sentinels": [{"host": "10.0.3.1", "port": 26379}], "master_name": "Locks"}]})",
    };
    for (const char* text : accepted) {
        CAPTURE(text);
        const auto parsed = redlock::parse_config(text);
        CHECK_MESSAGE(parsed.has_value(), (parsed ? std::string{} : parsed.error().what()));
    }
}

TEST_CASE("config: validate_config refuses the same cluster twice in a config built in code") {
    redlock::client_config config;
    config.clusters = {redlock::cluster_member{{{"127.0.0.1", 7711, ""}, {"127.0.0.1", 7712, ""}}},
                       redlock::cluster_member{{{"10.0.0.1", 7000, ""}}},
                       redlock::cluster_member{{{"127.0.0.1", 7711, ""}}}};
    const auto error = redlock::validate_config(config, "code");
    REQUIRE(error.has_value());
    CHECK(error->field == "/clusters/2/seeds/0");
    CHECK(overlap_has(error->message, "the same Redis Cluster listed twice"));

    config.clusters.pop_back();
    config.nodes = {{"127.0.0.1", 7712, ""}};
    const auto node_too = redlock::validate_config(config, "code");
    REQUIRE(node_too.has_value());
    CHECK(node_too->field == "/clusters/0/seeds/1");
    CHECK(overlap_has(node_too->message, "127.0.0.1:7712 is also /nodes/0"));

    config.nodes = {{"127.0.0.1", 7001, ""}};
    CHECK_FALSE(redlock::validate_config(config).has_value());
}

TEST_CASE("config: every shipped config has an odd number of members") {
    // An even count adds no fault tolerance, and the client warns about it (issue 38, item 10:
    // configs/mixed.json had four members). __FILE__ is tests/unit/ in the source tree.
    const auto configs =
        std::filesystem::path{__FILE__}.parent_path().parent_path().parent_path() / "configs";
    if (!std::filesystem::exists(configs / "mixed.json")) {
        MESSAGE("configs/ not found next to the sources; skipped");
        return;
    }
    int files = 0;
    for (const auto& file : std::filesystem::directory_iterator{configs}) {
        if (file.path().extension() != ".json") continue;
        CAPTURE(file.path().filename().string());
        ++files;
        const auto loaded = redlock::load_config(file.path());
        REQUIRE_MESSAGE(loaded.has_value(), (loaded ? std::string{} : loaded.error().what()));
        CHECK(loaded->member_count() % 2 == 1);
    }
    CHECK(files >= 6);
}
