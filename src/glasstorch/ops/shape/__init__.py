"""Shape ops: views, joining and rearranging, views of bytes as other dtypes, writes into views.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
