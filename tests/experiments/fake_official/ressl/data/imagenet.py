"""A fake `data/imagenet.py` (the harness's tests): it imports the memcached client, as the
official one does."""

import mc  # noqa: F401
