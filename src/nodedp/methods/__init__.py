"""Methods: one implementation module per family (torch), imported when its method runs. What a method is
(its registry entry, hyperparameters, the inputs it receives and the result it returns) is the torch-free
contract below the plans: ``nodedp.contract``."""
