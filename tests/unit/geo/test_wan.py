from atoll.platform.geo.wan import bsp_bytes_per_clock

SITES = ("virginia", "frankfurt", "singapore")


def test_bsp_sends_each_change_to_its_owner_and_each_piece_back() -> None:
    params = 400_000
    sent = bsp_bytes_per_clock(params, SITES)
    payload = 2 * (len(SITES) - 1) * 4 * params  # the textbook figure, without framing
    assert payload < sent < payload * 1.001  # framing and headers: a few bytes a message


def test_more_sites_more_bytes_and_one_site_none() -> None:
    assert bsp_bytes_per_clock(10_000, SITES[:2]) < bsp_bytes_per_clock(10_000, SITES)
    assert bsp_bytes_per_clock(10_000, SITES[:1]) == 0


def test_shards_split_the_same_bytes_into_more_messages() -> None:
    one, two = bsp_bytes_per_clock(10_000, SITES, 1), bsp_bytes_per_clock(10_000, SITES, 2)
    assert one < two < one * 1.05
