# A wrapper as Spearmint users wrote them: only the Python 2 print statements are ported.
# params["x"] and params["y"] are numpy arrays of size 1; float() and '%f' take them as numbers.
import math

import numpy as np


def branin(x, y):
    result = np.square(y - (5.1 / (4 * np.square(math.pi))) * np.square(x) + (5 / math.pi) * x - 6) \
        + 10 * (1 - (1. / (8 * math.pi))) * np.cos(x) + 10
    result = float(result)
    print('Result = %f' % result)
    return result


def main(job_id, params):
    print('Anything printed here ends up in the output file of job #%d' % job_id)
    print('x = %f, y = %f' % (params['x'], params['y']))
    return branin(params['x'], params['y'])
