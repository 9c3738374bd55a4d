"""Request bodies of /volumes/{id}/metadata (all microversions)."""
import copy

from cinder_lite.api.schemas import common

# POST (merge) and PUT (replace all)
metadata = {
    'type': 'object',
    'properties': {'metadata': common.metadata_dict},
    'required': ['metadata'],
    'additionalProperties': False,
}

# PUT /metadata/{key}: exactly the one key of the URL
_one_item = copy.deepcopy(common.metadata_dict)
_one_item.update(minProperties=1, maxProperties=1)
meta_item = {
    'type': 'object',
    'properties': {'meta': _one_item},
    'required': ['meta'],
    'additionalProperties': False,
}
