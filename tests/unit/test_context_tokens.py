"""The tokens a context carries on the bus: the caller's and a service's
own go to the API's RPC endpoint (which has Keystone check them);
notifications, which whoever listens reads, carry neither."""
from cinder_lite.common import context as cl_context
from cinder_lite.common import rpc


def test_both_tokens_cross_the_bus():
    ctxt = cl_context.RequestContext(auth_token='user-token',
                                     service_token='service-token',
                                     project_id='p', current=False)
    sent = rpc.ContextSerializer().serialize_context(ctxt)
    again = rpc.ContextSerializer().deserialize_context(sent)
    assert (again.auth_token, again.service_token) == ('user-token',
                                                       'service-token')


def test_no_service_token_no_key():
    ctxt = cl_context.RequestContext(auth_token='t', current=False)
    assert 'service_token' not in ctxt.to_dict()


def test_notifications_carry_no_token():
    ctxt = cl_context.RequestContext(auth_token='user-token',
                                     service_token='service-token',
                                     current=False)
    sent = rpc.NotificationSerializer().serialize_context(ctxt)
    assert 'auth_token' not in sent and 'service_token' not in sent
    assert 'service-token' not in repr(sent)
