"""Request body validation with jsonschema."""
import jsonschema
import webob.exc

_FORMAT_CHECKER = jsonschema.FormatChecker()


def validate(schema, body):
    """Raise 400 with a message naming the offending field."""
    validator = jsonschema.Draft4Validator(schema,
                                           format_checker=_FORMAT_CHECKER)
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
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
