"""The data sets' back-ends, each split handed over as a `source.Source`: Fashion-MNIST's IDX files
(`fashion_mnist`), the colour set generated from them (`color_fashion_mnist`), the tfds sets
(`tfds_source`) and user image folders (`image_folder`). `ssl_jax.data.datasets` picks one.
"""
