def test_create_and_delete(api):
    vol = api.create_volume(size=1, name='smoke')
    assert vol['status'] == 'available'
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
