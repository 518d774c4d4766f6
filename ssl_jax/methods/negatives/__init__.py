"""The methods' bank machinery: which rows of a sharded bank a step uses as negatives (and
positives), never gathering the bank.

- `bank_search`: rank, threshold and sample a bank's rows by their similarity to replicated queries
  (top-k, quantiles, draws in a band or by label).
- `sampling`: the methods' samplers on it: InterCLR's inter-image positive and negatives
  (semi-hard / hard / random / semi-easy) and Ring's conditional negatives with their annealing.
- `clustering`: InterCLR's cluster state (k-means, centroids, small-cluster fix) beside the bank.
"""
