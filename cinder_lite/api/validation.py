"""Request body validation with jsonschema."""
import jsonschema
import webob.exc

_FORMAT_CHECKER = jsonschema.FormatChecker()
# id of a schema -> (the schema, its validator): the schemas are the
# handlers' constants, a few dozen, and a validator made for each request
# cost more than validating (110 of 250 us for POST /attachments' body);
# the schema is kept so that its id names it for as long as the entry is
# there
_VALIDATORS = {}


def _validator(schema):
    known = _VALIDATORS.get(id(schema))
    if known is None or known[0] is not schema:
        if len(_VALIDATORS) >= 512:       # (a schema made per request)
            _VALIDATORS.clear()
        known = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft4Validator(
            schema, format_checker=_FORMAT_CHECKER))
    return known[1]


def validate(schema, body):
    """Raise 400 with a message naming the offending field."""
    error = jsonschema.exceptions.best_match(
        _validator(schema).iter_errors(body))
    if error is None:
        return
    path = '/'.join(str(p) for p in error.absolute_path)
    if error.validator == 'additionalProperties':
        message = 'Additional properties are not allowed (%s)' % (
            error.message.split('(')[-1].rstrip(')'))
        if path:
            message = "Invalid input for field/attribute %s. %s" % (
                path, message)
    elif error.validator == 'required':
        message = "Invalid input for field/attribute %s. %s" % (
            path or 'body', error.message)
    elif isinstance(error.schema, dict) and \
            isinstance(error.schema.get('description'), str):
        # a schema that says what its value must be (a connector's)
        message = 'Invalid input for field/attribute %s. Value: %s. It ' \
                  'must be %s.' % (path or 'body', _short(error.instance),
                                   error.schema['description'])
    else:
        message = 'Invalid input for field/attribute %s. Value: %s. %s' % (
            path or 'body', _short(error.instance), error.message)
    raise webob.exc.HTTPBadRequest(explanation=message)


def _short(value):
    text = repr(value)
    return text if len(text) <= 100 else text[:97] + '...'
