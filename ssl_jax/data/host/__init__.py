"""The recipe ops on the host, in TensorFlow (tf.data): the twins of `ssl_jax.data.device`.

`augment` runs a recipe (`apply_recipe`, `apply_ops`, the input pipeline's stages) with the batch
ops of `geometry`, `colour` and `randaugment`; `color_spaces` converts RGB for `color_space`;
`tensors` holds their helpers; `randaugment_grid` draws every RandAugment op beside PIL's.
"""
