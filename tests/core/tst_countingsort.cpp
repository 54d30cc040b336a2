// SPDX-License-Identifier: MIT
#include "core/util/countingsort.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

using namespace headroom;

namespace {

using Item = std::pair<int64_t, int>; // key, position before sorting

std::vector<Item> randomItems(size_t n, int64_t keys, unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int64_t> key(0, keys - 1);
    std::vector<Item> items;
    for (size_t i = 0; i < n; ++i)
        items.emplace_back(key(rng), int(i));
    return items;
}

std::vector<Item> stableSorted(std::vector<Item> items)
{
    std::stable_sort(items.begin(), items.end(), [](const Item& x, const Item& y) { return x.first < y.first; });
    return items;
}

} // namespace

TEST_CASE("countingSortByKey orders like std::stable_sort", "[util]")
{
    const auto keyOf = [](const Item& x) { return x.first; };
    SECTION("dense keys, many ties: the counting sort")
    {
        auto items = randomItems(5000, 300, 1);
        const auto expected = stableSorted(items);
        countingSortByKey(items, 300, keyOf);
        CHECK(items == expected);
    }
    SECTION("keys up to the limit's last value")
    {
        auto items = randomItems(1000, 1000, 2);
        items.emplace_back(999, 1000);
        const auto expected = stableSorted(items);
        countingSortByKey(items, 1000, keyOf);
        CHECK(items == expected);
    }
    SECTION("a key outside the limit falls back to std::stable_sort, same order")
    {
        auto items = randomItems(1000, 100, 3);
        items.emplace_back(-5, 1000);
        items.emplace_back(250, 1001);
        const auto expected = stableSorted(items);
        countingSortByKey(items, 100, keyOf);
        CHECK(items == expected);
    }
    SECTION("a limit far above the count (sparse keys) falls back too")
    {
        auto items = randomItems(100, int64_t(1) << 40, 4);
        const auto expected = stableSorted(items);
        countingSortByKey(items, int64_t(1) << 40, keyOf);
        CHECK(items == expected);
    }
    SECTION("already sorted, empty and single inputs stay as they are")
    {
        auto items = stableSorted(randomItems(200, 50, 5));
        const auto expected = items;
        countingSortByKey(items, 50, keyOf);
        CHECK(items == expected);
        std::vector<Item> none;
        countingSortByKey(none, 10, keyOf);
        CHECK(none.empty());
        std::vector<Item> one{{7, 0}};
        countingSortByKey(one, 1, keyOf); // out of range: left alone either way
        CHECK(one == std::vector<Item>{{7, 0}});
    }
}
