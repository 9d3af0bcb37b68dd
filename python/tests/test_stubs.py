"""The type stubs (python/attend/_attend.pyi) name every public thing of the extension."""
import ast
import pathlib

import attend
import attend._attend as ext

STUB = pathlib.Path(attend.__file__).with_name("_attend.pyi")


def stub_names():
    tree = ast.parse(STUB.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        elif isinstance(node, ast.Assign):
            top.update(t.id for t in node.targets)
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    names.add(item.target.id)
            members[node.name] = names
    return top, members


def public(names):
    return {n for n in names if not n.startswith("_") or n == "_GradModeScope"}


def test_every_module_name_has_a_stub():
    top, _ = stub_names()
    assert public(dir(ext)) - top == set()
    assert (STUB.parent / "py.typed").exists()


def test_every_class_member_has_a_stub():
    _, members = stub_names()
    for name in public(dir(ext)):
        cls = getattr(ext, name)
        if not isinstance(cls, type) or issubclass(cls, BaseException) or name == "DType":
            continue
        missing = {m for m in dir(cls) if not m.startswith("_")} - members.get(name, set())
        assert missing == set(), f"{name}: {sorted(missing)} missing from {STUB.name}"
