from slurmwords.option_lists import option_items


def test_words_and_items_as_slurmctld_reads_them():
    assert option_items(" bf_interval=30, nohold_on_prolog_fail,,max_script_size= 5 ,bf_interval=40") == {
        "bf_interval": "40",
        "nohold_on_prolog_fail": None,
        "max_script_size": "5",
    }
    assert option_items(None) == {}
