"""tests/fixtures/fetch.py --git: a project's suite published only in its
repository (veros's) is taken at its commit only if git's hash of its tree
is the one git_sources.tsv names, and nothing half-made is left."""

import subprocess

import pytest

from project_modules import fetch


def _repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    (repo / "test" / "a_test.py").write_text("def test_a():\n    pass\n")
    (repo / "other.txt").write_text("not taken\n")
    git = lambda *a: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a],
                                    cwd=repo, check=True, capture_output=True, text=True).stdout
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "one")
    commit = git("rev-parse", "HEAD").strip()
    return repo, commit, git("rev-parse", "HEAD:test").strip()


def test_the_path_at_the_commit_is_taken_when_its_tree_is_the_entrys(tmp_path):
    repo, commit, tree = _repo(tmp_path)
    cache = tmp_path / "cache"
    entry = {"name": "p", "version": "1", "repository": "https://unused.invalid/p",
             "commit": commit, "path": "test", "tree": tree, "folder": "p-1-tests"}
    fetch.fetch_git(entry, cache, str(repo))
    got = cache / "p-1-tests"
    assert (got / "test" / "a_test.py").read_text() == "def test_a():\n    pass\n"
    assert not (got / "other.txt").exists() and not (got / ".git-fetch").exists()
    assert fetch.complete(entry, cache)
    fetch.fetch_git(entry, cache, "/nonexistent")  # complete: not fetched again


def test_a_tree_that_is_not_the_entrys_is_refused_and_nothing_is_left(tmp_path):
    repo, commit, tree = _repo(tmp_path)
    cache = tmp_path / "cache"
    entry = {"name": "p", "version": "1", "repository": str(repo), "commit": commit,
             "path": "test", "tree": "0" * 40, "folder": "p-1-tests"}
    with pytest.raises(ValueError, match=f"test at {commit}: tree {tree}, expected 0{{40}}"):
        fetch.fetch_git(entry, cache)
    assert not (cache / "p-1-tests").exists() and list(cache.iterdir()) == []


def test_the_manifest_names_each_entry_it_has():
    names = [e["name"] for e in fetch.git_entries()]
    assert "veros" in names
    with pytest.raises(LookupError, match="has no entry 'nope'; it has veros"):
        fetch.git_entry("nope")
    veros = fetch.git_entry("veros")
    assert len(veros["commit"]) == len(veros["tree"]) == 40 and veros["path"] == "test"


def test_several_paths_are_taken_from_a_bare_clone_in_place(tmp_path):
    """pybammsolvers' submodules: only the parts its build reads (SUNDIALS
    without its documentation), each checked, read from a mirror in place."""
    repo, commit, tree = _repo(tmp_path)
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    blob = subprocess.run(["git", "rev-parse", f"{commit}:other.txt"], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()
    cache = tmp_path / "cache"
    entry = {"name": "p", "version": "1", "repository": "https://unused.invalid/p",
             "commit": commit, "path": "test,other.txt", "tree": f"{tree},{blob}",
             "folder": "p-1-parts"}
    fetch.fetch_git(entry, cache, str(bare))
    got = cache / "p-1-parts"
    assert (got / "test" / "a_test.py").exists() and (got / "other.txt").read_text() == \
        "not taken\n"
    wrong = dict(entry, tree=f"{tree},{'0' * 40}", folder="p-1-wrong")
    with pytest.raises(ValueError, match=f"other.txt at {commit}: tree {blob}"):
        fetch.fetch_git(wrong, cache, str(bare))
    assert not (cache / "p-1-wrong").exists()
