"""`python -m ssl_jax.detection`: see `ssl_jax.detection.train_net`."""

from ssl_jax.detection.train_net import run

if __name__ == "__main__":
    run()
