from conftest import git_subjects, run_cli


def test_remember_search_round_trip(vault):
    run_cli("remember", "Production deploys only from main, after CI is green.", "--type", "rule",
            "--title", "Deploy from main only")
    out = run_cli("search", "deploy production").stdout
    assert "deploy-from-main-only" in out
    assert git_subjects(vault.root)[0] == "hafiza: remember deploy-from-main-only"
