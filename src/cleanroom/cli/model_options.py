"""Command-line options made from settings models (`harness.settings`).

A command takes a settings model as a keyword-only parameter (``settings: RunSettings``)
and `with_settings` puts one option in its place for each of the model's fields: the
field's name is the option's (``warm_standby``: ``--warm-standby/--no-warm-standby``, or
as its `CliOption` spells it), its description the help, its default the default, its
bounds (``ge``, ``le``) the range. A field that is itself a model (a section) gives an
option for each of its own fields. Names (a tuple of strings) are one comma-separated
option. The command is called with the model built from the options; a value the model
refuses is a bad parameter, said in the model's words.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import annotated_types
import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from cleanroom.harness.settings import CliOption

# Where a field's value sits in its model: ("outside_agents", "port").
FieldPath = tuple[str, ...]


def with_settings(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with each parameter annotated with a settings model replaced by that
    model's options, in its place; ``command`` gets the model built from them."""
    hints = typing.get_type_hints(command, include_extras=True)
    models: dict[str, type[BaseModel]] = {}
    fields: dict[str, list[tuple[str, FieldPath]]] = {}
    params: list[inspect.Parameter] = []
    for param in inspect.signature(command).parameters.values():
        hint = hints[param.name]
        if _section(hint) is None:
            params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hint))
            continue
        models[param.name] = hint
        fields[param.name] = []
        for option, path in options_of(hint):
            params.append(option)
            fields[param.name].append((option.name, path))

    def call(**values: Any) -> None:
        built = {
            name: build(model, {path: values.pop(param) for param, path in fields[name]})
            for name, model in models.items()
        }
        command(**values, **built)

    call.__name__ = command.__name__
    call.__qualname__ = command.__qualname__
    call.__doc__ = command.__doc__
    call.__module__ = command.__module__
    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return call


def options_of(
    model: type[BaseModel], within: FieldPath = ()
) -> Iterator[tuple[inspect.Parameter, FieldPath]]:
    """One typer option for every field of ``model`` (and of its sections), as a
    keyword-only parameter, with where its value goes in the model."""
    for name, field in model.model_fields.items():
        section = _section(field.annotation)
        if section is not None:
            yield from options_of(section, (*within, name))
        else:
            yield _option(name, field), (*within, name)


def build(model: type[BaseModel], values: dict[FieldPath, Any]) -> Any:
    """``model`` from the options' ``values``; `typer.BadParameter` with the model's
    reasons when it refuses them."""
    data: dict[str, Any] = {}
    for path, value in values.items():
        place = data
        for key in path[:-1]:
            place = place.setdefault(key, {})
        place[path[-1]] = value
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise typer.BadParameter(reasons(exc)) from exc


def reasons(exc: ValidationError) -> str:
    """What a model refused, in the words its own checks raised."""
    said = []
    for error in exc.errors():
        raised = error.get("ctx", {}).get("error")
        said.append(str(raised) if isinstance(raised, ValueError) else error["msg"])
    return "; ".join(said)


def _option(name: str, field: FieldInfo) -> inspect.Parameter:
    spelled = next((m for m in field.metadata if isinstance(m, CliOption)), CliOption())
    option = spelled.name or "--" + name.replace("_", "-")
    value_type, names = _value_type(field.annotation)
    default = field.get_default(call_default_factory=True)
    if names and default is not None:
        default = ",".join(default)
    negatable = value_type is bool and spelled.negatable
    declared = f"{option}/--no-{option.removeprefix('--')}" if negatable else option
    info = typer.Option(declared, help=field.description, metavar=spelled.metavar, **_bounds(field))
    return inspect.Parameter(
        option.removeprefix("--").replace("-", "_"),
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[value_type, info],
    )


def _bounds(field: FieldInfo) -> dict[str, Any]:
    """The option's range, from the field's bounds."""
    bounds: dict[str, Any] = {}
    for m in field.metadata:
        if isinstance(m, annotated_types.Ge):
            bounds["min"] = m.ge
        elif isinstance(m, annotated_types.Gt):
            bounds["min"], bounds["min_open"] = m.gt, True
        elif isinstance(m, annotated_types.Le):
            bounds["max"] = m.le
        elif isinstance(m, annotated_types.Lt):
            bounds["max"], bounds["max_open"] = m.lt, True
    return bounds


def _value_type(annotation: Any) -> tuple[Any, bool]:
    """The option's type for a field's type, and whether it takes comma-separated names
    (a tuple of strings) in one string."""
    arms = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    optional = type(None) in arms
    (value,) = [a for a in arms if a is not type(None)]
    if typing.get_origin(value) is Annotated:
        value = typing.get_args(value)[0]
    names = typing.get_origin(value) is tuple
    if names:
        value = str
    return (value | None if optional else value), names


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _section(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None
