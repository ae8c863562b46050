"""splice in other tools' environments: IPython and Jupyter (``ipython``), Dask clusters
(``dask``)."""
