"""cinder_lite: a block-storage control plane speaking the Cinder v3 API."""
import warnings

# oslo.messaging imports oslo.service, which imports eventlet's loopingcall
# at import time; cinder_lite never uses eventlet (native threads), so the
# deprecation banner is noise in every command's output.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
