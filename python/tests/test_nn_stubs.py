"""The type stubs of attend.nn, attend.optim and the high-level doors (nn.pyi, optim.pyi,
highlevel.pyi) name every public thing the modules have, and every member of their classes."""
import ast
import pathlib

import pytest

import attend
import attend.highlevel
import attend.nn
import attend.optim


def stub(module):
    tree = ast.parse(pathlib.Path(module.__file__).with_suffix(".pyi").read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {item.name if isinstance(item, ast.FunctionDef) else item.target.id
                                  for item in node.body if isinstance(item, (ast.FunctionDef, ast.AnnAssign))}
    return top, members


@pytest.mark.parametrize("module", [attend.nn, attend.optim, attend.highlevel], ids=lambda m: m.__name__)
def test_every_public_name_and_member_has_a_stub(module):
    top, members = stub(module)
    public = set(module.__all__)
    assert public - top == set()
    for name in public:
        value = getattr(module, name)
        if not isinstance(value, type):
            continue
        own = {m for m in dir(value) if not m.startswith("_")}
        # a stubbed class inherits its stubbed base's members
        for base in value.__mro__[1:]:
            own -= members.get(base.__name__, set()) if base.__name__ in top else set()
        assert own - members.get(name, set()) == set(), name
