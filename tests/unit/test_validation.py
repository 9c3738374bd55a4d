"""``api.validation.validate``: each schema is checked by its own
validator, made once and kept."""
import pytest
import webob.exc

from cinder_lite.api import validation


def test_each_schema_is_validated_by_its_own_validator():
    objects = {'type': 'object', 'required': ['a'],
               'properties': {'a': {'type': 'integer'}}}
    strings = {'type': 'string'}
    validation.validate(objects, {'a': 1})
    validation.validate(strings, 'x')
    with pytest.raises(webob.exc.HTTPBadRequest, match='body'):
        validation.validate(objects, {})
    with pytest.raises(webob.exc.HTTPBadRequest,
                       match="Invalid input for field/attribute a"):
        validation.validate(objects, {'a': 'one'})
    with pytest.raises(webob.exc.HTTPBadRequest):
        validation.validate(strings, {'a': 1})
    # made once per schema
    assert validation._validator(objects) is validation._validator(objects)
    assert validation._validator(strings) is not \
        validation._validator(objects)


def test_a_new_schema_where_an_old_one_was_gets_its_own_validator():
    # a schema object gone, and a new one at the same id: the entry left
    # there (another schema's, whose validator takes anything) is not used
    strings = {'type': 'string'}
    gone = {}
    validation._VALIDATORS[id(strings)] = (
        gone, validation.jsonschema.Draft4Validator(gone))
    with pytest.raises(webob.exc.HTTPBadRequest):
        validation.validate(strings, {'a': 1})
    assert validation._VALIDATORS[id(strings)][0] is strings
