"""cinder_lite: a block-storage control plane speaking the Cinder v3 API."""
import warnings

# oslo.messaging imports oslo.service, which imports eventlet's loopingcall
# at import time; cinder_lite never uses eventlet (native threads), so the
# deprecation banner is noise in every command's output.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
# The same import of eventlet loads dnspython's DNSSEC algorithms, whose
# DSA classes cryptography deprecates (51 here) on first use (one
# warning per class, on stderr): nothing of cinder_lite's touches DNSSEC,
# and the lines broke every command's ``--version`` output.
warnings.filterwarnings('ignore', message=r'DSA is deprecated',
                        module=r'dns\.dnssecalgs')
