"""fmnist_flower: a Flower / PyTorch app on Fashion-MNIST."""
