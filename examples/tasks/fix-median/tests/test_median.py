import sys

sys.path.insert(0, "/app")

from stats import mean, median


def test_odd_count_is_the_middle_of_the_sorted_values():
    assert median([3, 1, 2]) == 2


def test_even_count_is_the_mean_of_the_two_middle_values():
    assert median([4, 1, 3, 2]) == 2.5


def test_single_value():
    assert median([7]) == 7


def test_mean_still_works():
    assert mean([1, 2, 3, 4]) == 2.5
